import { isIPv6 } from "node:net";
import { formatIpv4, parseIpv4 } from "./ipv4.js";
import type { SplitLine } from "./line-splitter.js";

/**
 * The proxy-line parser of uploads (docs/proxies.md "Formats"). Pure: one
 * line in, one verdict out. Accepted forms, with an optional trailing
 * comment (`#` at the start of a line or after whitespace):
 *
 *   ip:port                      ip:port:user:pass   (pass may contain `:`)
 *   user:pass@ip:port            ip:port@user:pass
 *   scheme://[user:pass@]ip:port (http, https, socks4, socks5; socks4a and
 *                                 socks5h are read as socks4 and socks5)
 *   scheme:// before the other two credential forms as well, as templated
 *                                 exports write them (`protocol://ip:port:username:password`)
 *   ip port                      (spaces or tabs)
 *
 * Every non-empty line gets exactly one verdict, checked in this order:
 * format, then address, then port.
 */

export const PROXY_SCHEMES = ["http", "https", "socks4", "socks5"] as const;
export type ProxyScheme = (typeof PROXY_SCHEMES)[number];

export interface ParsedProxy {
  /** Canonical dotted quad (leading zeros removed). */
  ip: string;
  /** The same address as an unsigned 32-bit number. */
  ipNumber: number;
  port: number;
  /** Empty when the line has no credentials. */
  username: string;
  password: string;
  /** Scheme written on the line, kept as a protocol hint. */
  scheme: ProxyScheme | null;
}

/** Why a line was refused; names match the upload counters. */
export type LineRejection = "invalidFormat" | "invalidIp" | "invalidIpv4" | "invalidPort";

export type LineVerdict =
  | { kind: "empty" }
  | { kind: "proxy"; proxy: ParsedProxy }
  | { kind: "invalid"; reason: LineRejection };

/** Longest username or password we store; longer is an invalid format. */
export const MAX_CREDENTIAL_LENGTH = 255;

const EMPTY: LineVerdict = { kind: "empty" };
const INVALID_FORMAT: LineVerdict = { kind: "invalid", reason: "invalidFormat" };
const INVALID_IP: LineVerdict = { kind: "invalid", reason: "invalidIp" };
const INVALID_IPV4: LineVerdict = { kind: "invalid", reason: "invalidIpv4" };
const INVALID_PORT: LineVerdict = { kind: "invalid", reason: "invalidPort" };

const DIGITS = /^\d+$/;
const WHITESPACE = /\s+/;
const COMMENT_AFTER_SPACE = /\s#/;
const SCHEME_PREFIX = /^([A-Za-z][A-Za-z0-9]*):\/\//;
/** `[user:pass@]host:port/`: a URL whose path is empty. */
const URL_WITH_SLASH = /^(?:[^@]*@)?(?:[^:@]*|\[[^\]@]*\]):\d+\/$/;
const SCHEME_ALIASES: Readonly<Record<string, ProxyScheme>> = {
  http: "http",
  https: "https",
  socks4: "socks4",
  socks4a: "socks4",
  socks5: "socks5",
  socks5h: "socks5",
};

/** Strips a BOM, a trailing comment and surrounding whitespace; "" when nothing is left. */
export function stripLine(line: string): string {
  let text = line.charCodeAt(0) === 0xfeff ? line.slice(1) : line;
  const trimmed = text.trimStart();
  if (trimmed.startsWith("#")) return "";
  const comment = COMMENT_AFTER_SPACE.exec(trimmed);
  text = comment ? trimmed.slice(0, comment.index) : trimmed;
  return text.trimEnd();
}

/** Classifies one line (without its line break). */
export function parseProxyLine(line: string): LineVerdict {
  const text = stripLine(line);
  if (text === "") return EMPTY;
  // U+0000 cannot be stored in PostgreSQL text and is never part of a real line.
  if (text.includes("\u0000")) return INVALID_FORMAT;
  const tokens = text.split(WHITESPACE);
  if (tokens.length === 2) {
    const [host = "", port = ""] = tokens;
    // `ip port`: the second token must look like a port, else the line is prose.
    if (!DIGITS.test(port) || host.includes("@") || host.includes("://")) return INVALID_FORMAT;
    return hostAndPort(host, port, "", "", null);
  }
  if (tokens.length !== 1) return INVALID_FORMAT;
  return parseToken(text);
}

function parseToken(token: string): LineVerdict {
  let rest = token;
  let scheme: ProxyScheme | null = null;
  const prefix = SCHEME_PREFIX.exec(rest);
  if (prefix) {
    const alias = SCHEME_ALIASES[(prefix[1] ?? "").toLowerCase()];
    if (!alias) return INVALID_FORMAT;
    scheme = alias;
    rest = rest.slice(prefix[0].length);
    // A URL's empty path after the port; a `/` ending a password (`ip:port:user:pass/`) is the password's.
    if (URL_WITH_SLASH.test(rest)) rest = rest.slice(0, -1);
  }
  if (rest === "") return INVALID_FORMAT;

  if (rest.startsWith("[") && !rest.includes("@")) return bracketed(rest);
  const parts = rest.split(":");
  // ip:port:user:pass — checked first so a user name may be an e-mail address
  // and a password may hold `@` or `::`.
  if (parts.length >= 4 && DIGITS.test(parts[1] ?? "") && parseIpv4(parts[0] ?? "") >= 0) {
    const [host = "", port = "", username = "", ...password] = parts;
    return hostAndPort(host, port, username, password.join(":"), scheme);
  }
  if (rest.includes("@")) return withCredentials(rest, scheme);
  // A bare IPv6 literal (its colons are not a port separator; it has at least two).
  if (parts.length > 2 && isIPv6(rest)) return INVALID_IPV4;
  if (parts.length === 2) return hostAndPort(parts[0] ?? "", parts[1] ?? "", "", "", scheme);
  // host:port:user:pass with a host or port that is not valid: they decide the verdict.
  if (parts.length >= 4) return hostAndPort(parts[0] ?? "", parts[1] ?? "", "", "", scheme);
  return INVALID_FORMAT;
}

/**
 * `user:pass@host:port` or `host:port@user:pass`. When both readings fit
 * (`1.2.3.4:80@user:8` — the password looks like a port), the one whose host
 * is an IPv4 address wins; otherwise `user:pass@host:port` is preferred.
 */
function withCredentials(token: string, scheme: ProxyScheme | null): LineVerdict {
  const lastAt = token.lastIndexOf("@");
  const head = token.slice(0, lastAt);
  const tail = head.includes(":") ? splitHostPort(token.slice(lastAt + 1)) : null;
  const firstAt = token.indexOf("@");
  const credentials = token.slice(firstAt + 1);
  const front = credentials.includes(":") ? splitHostPort(token.slice(0, firstAt)) : null;
  const useTail = tail !== null && (isIpv4Host(tail) || front === null || !isIpv4Host(front));
  if (tail !== null && useTail) {
    const colon = head.indexOf(":");
    return finish(tail, head.slice(0, colon), head.slice(colon + 1), scheme);
  }
  if (front !== null) {
    const colon = credentials.indexOf(":");
    return finish(front, credentials.slice(0, colon), credentials.slice(colon + 1), scheme);
  }
  return INVALID_FORMAT;
}

const isIpv4Host = (hostPort: HostPort): boolean => !hostPort.bracketed && parseIpv4(hostPort.host) >= 0;

interface HostPort {
  host: string;
  port: string;
  bracketed: boolean;
}

/** `host:port` or `[v6]:port` with a numeric port; null when it is not that shape. */
function splitHostPort(text: string): HostPort | null {
  if (text.startsWith("[")) {
    const close = text.indexOf("]");
    if (close < 0 || text[close + 1] !== ":") return null;
    const port = text.slice(close + 2);
    return DIGITS.test(port) ? { host: text.slice(1, close), port, bracketed: true } : null;
  }
  const colon = text.indexOf(":");
  if (colon <= 0 || text.indexOf(":", colon + 1) >= 0) return null;
  const port = text.slice(colon + 1);
  return DIGITS.test(port) ? { host: text.slice(0, colon), port, bracketed: false } : null;
}

function bracketed(token: string): LineVerdict {
  const close = token.indexOf("]");
  if (close < 0) return INVALID_FORMAT;
  const after = token.slice(close + 1);
  if (after !== "" && !(after.startsWith(":") && DIGITS.test(after.slice(1)))) return INVALID_FORMAT;
  return isIPv6(token.slice(1, close)) ? INVALID_IPV4 : INVALID_IP;
}

function finish(hostPort: HostPort, username: string, password: string, scheme: ProxyScheme | null): LineVerdict {
  if (hostPort.bracketed) return isIPv6(hostPort.host) ? INVALID_IPV4 : INVALID_IP;
  return hostAndPort(hostPort.host, hostPort.port, username, password, scheme);
}

function hostAndPort(host: string, portText: string, username: string, password: string, scheme: ProxyScheme | null): LineVerdict {
  if (username === "" && password !== "") return INVALID_FORMAT;
  if (username.length > MAX_CREDENTIAL_LENGTH || password.length > MAX_CREDENTIAL_LENGTH) return INVALID_FORMAT;
  const ipNumber = parseIpv4(host);
  if (ipNumber < 0) return isIPv6(host) ? INVALID_IPV4 : INVALID_IP;
  if (!DIGITS.test(portText) || portText.length > 5) return INVALID_PORT;
  const port = Number(portText);
  if (port < 1 || port > 65535) return INVALID_PORT;
  return { kind: "proxy", proxy: { ip: formatIpv4(ipNumber), ipNumber, port, username, password, scheme } };
}

/** A proxy found by scanCommonLine: the fields an upload keeps (the address as its number). */
export interface CommonLine {
  ipNumber: number;
  port: number;
  username: string;
  password: string;
  scheme: ProxyScheme | null;
}

const COLON = 58;
const AT = 64;
const DOT = 46;
const CR = 13;

/** Letters, digits, `.`, `_` and `-`: credentials the common forms take as they are. */
function plainCredentialChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === DOT || c === 95 || c === 45;
}

/** What the scans below found: the address, the port, and the last run of digits. */
const scanned = { ip: 0, port: 0, digits: 0 };

/** The end of a run of 1 to `most` digits from `from` (its value in `scanned.digits`), or -1 when there is none. */
function scanDigits(text: string, from: number, to: number, most: number): number {
  let value = 0;
  let i = from;
  for (; i < to && i - from < most; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) break;
    value = value * 10 + (c - 48);
  }
  scanned.digits = value;
  return i === from ? -1 : i;
}

/** `ip:port` from `from`: the index after the port, or -1 (the values in `scanned`). */
function scanIpPort(text: string, from: number, to: number): number {
  let i = from;
  let ip = 0;
  for (let octet = 0; octet < 4; octet++) {
    i = scanDigits(text, i, to, 3);
    if (i === -1 || scanned.digits > 255) return -1;
    ip = ip * 256 + scanned.digits;
    if (text.charCodeAt(i++) !== (octet < 3 ? DOT : COLON)) return -1;
  }
  i = scanDigits(text, i, to, 5);
  if (i === -1 || scanned.digits < 1 || scanned.digits > 65535) return -1;
  scanned.ip = ip;
  scanned.port = scanned.digits;
  return i;
}

/** The end of a run of plain credential characters from `from` (at most MAX_CREDENTIAL_LENGTH), or -1 when it is empty or longer. */
function scanCredential(text: string, from: number, to: number): number {
  let i = from;
  while (i < to && plainCredentialChar(text.charCodeAt(i))) i++;
  return i === from || i - from > MAX_CREDENTIAL_LENGTH ? -1 : i;
}

/**
 * The forms nearly every uploaded line takes, read in one pass without the
 * general parser's splits, regular expressions and objects (an upload's
 * hot loop): `ip:port`, `ip:port:user:pass`, `user:pass@ip:port`, each
 * optionally after a lowercase `http://`, `https://`, `socks4://` or
 * `socks5://`, with an optional final `\r`.
 * Credentials are plain (letters, digits, `.`, `_`, `-`); the address is a
 * dotted quad, the port 1-65535. True fills `out` with what
 * classifyLine's proxy holds for the line; false means "not one of these"
 * (any other form, and every invalid or empty line), which classifyLine
 * decides.
 */
export function scanCommonLine(text: string, out: CommonLine): boolean {
  let to = text.length;
  if (to > 0 && text.charCodeAt(to - 1) === CR) to--;
  if (to < 9) return false;
  let i = 0;
  let scheme: ProxyScheme | null = null;
  const first = text.charCodeAt(0);
  if (first === 104 || first === 115) {
    // h, s: perhaps a scheme (else a user name)
    for (const candidate of PROXY_SCHEMES) {
      if (text.startsWith(candidate, 0) && text.startsWith("://", candidate.length)) {
        scheme = candidate;
        i = candidate.length + 3;
        break;
      }
    }
  }
  let end = scanIpPort(text, i, to);
  if (end !== -1) {
    out.ipNumber = scanned.ip;
    out.port = scanned.port;
    out.scheme = scheme;
    if (end === to) {
      out.username = "";
      out.password = "";
      return true;
    }
    // ip:port:user:pass
    if (text.charCodeAt(end) !== COLON) return false;
    const userEnd = scanCredential(text, end + 1, to);
    if (userEnd === -1 || text.charCodeAt(userEnd) !== COLON) return false;
    const passwordEnd = scanCredential(text, userEnd + 1, to);
    if (passwordEnd !== to) return false;
    out.username = text.slice(end + 1, userEnd);
    out.password = text.slice(userEnd + 1, to);
    return true;
  }
  // user:pass@ip:port
  const userEnd = scanCredential(text, i, to);
  if (userEnd === -1 || text.charCodeAt(userEnd) !== COLON) return false;
  const passwordEnd = scanCredential(text, userEnd + 1, to);
  if (passwordEnd === -1 || text.charCodeAt(passwordEnd) !== AT) return false;
  end = scanIpPort(text, passwordEnd + 1, to);
  if (end !== to) return false;
  out.ipNumber = scanned.ip;
  out.port = scanned.port;
  out.scheme = scheme;
  out.username = text.slice(i, userEnd);
  out.password = text.slice(userEnd + 1, passwordEnd);
  return true;
}

/**
 * The verdict for a line from the splitter. Of an overlong line only its
 * beginning was kept: a comment or a blank line is not counted; a line whose
 * trailing comment starts within that beginning is read like any other (what
 * follows the comment's start cannot change the verdict); anything else is an
 * invalid format, whatever its beginning says.
 */
export function classifyLine(line: SplitLine): LineVerdict {
  if (!line.overlong) return parseProxyLine(line.text);
  if (line.blank) return EMPTY;
  const start = (line.text.charCodeAt(0) === 0xfeff ? line.text.slice(1) : line.text).trimStart();
  if (start.startsWith("#")) return EMPTY;
  return COMMENT_AFTER_SPACE.test(start) ? parseProxyLine(line.text) : INVALID_FORMAT;
}
