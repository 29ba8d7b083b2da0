import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

import { freePort } from "../wait-for.js";
import { makePeerDir, requirePeerBinary, startPeerProcess, type PeerDir, type PeerProcess } from "./peer-process.js";

const run = promisify(execFile);

export interface PeerCredentials {
  username: string;
  password: string;
}

/** A running proxy peer, shaped like the dialers' proxy endpoint. */
export interface ProxyPeer {
  protocol: "http" | "socks4" | "socks5";
  host: string;
  port: number;
  /** Set when the peer requires them. */
  credentials?: PeerCredentials;
  /** The loopback address the peer's outgoing connections come from (judges see it). */
  egressAddress: string;
  stop(): Promise<void>;
}

/**
 * Egress addresses per peer, so a judge on 127.0.0.9 sees 127.0.0.1 only when a
 * proxy leaks the client (test-peers.md, "Anonymity fixtures").
 */
export const PEER_EGRESS = { tinyproxy: "127.0.0.2", squid: "127.0.0.3", dante: "127.0.0.4", microsocks: "127.0.0.5" } as const;

function composeStop(daemon: PeerProcess, dir: PeerDir, extra?: () => Promise<void>): () => Promise<void> {
  let stopping: Promise<void> | undefined;
  return () =>
    (stopping ??= (async () => {
      try {
        await daemon.stop();
      } finally {
        await extra?.().catch(() => undefined);
        await dir.remove();
      }
    })());
}

/** elite: no Via; anonymous: Via; transparent: X-Tinyproxy with the client's address. */
export type TinyproxyMode = "elite" | "anonymous" | "transparent";

export interface TinyproxyOptions {
  /** @defaultValue "elite" */
  mode?: TinyproxyMode;
  basicAuth?: PeerCredentials;
  /** @defaultValue PEER_EGRESS.tinyproxy */
  egressAddress?: string;
}

/** tinyproxy: HTTP absolute-form and CONNECT to any port, optional Basic auth. */
export async function startTinyproxy(options: TinyproxyOptions = {}): Promise<ProxyPeer> {
  const binary = requirePeerBinary("tinyproxy");
  const mode = options.mode ?? "elite";
  const egressAddress = options.egressAddress ?? PEER_EGRESS.tinyproxy;
  const dir = await makePeerDir("tinyproxy");
  const port = await freePort();
  const lines = [
    `Port ${port}`,
    "Listen 127.0.0.1",
    `Bind ${egressAddress}`,
    "Timeout 30",
    "MaxClients 256",
    "Allow 127.0.0.1",
    `PidFile "${join(dir.path, "tinyproxy.pid")}"`,
    "LogLevel Warning",
    ...(mode === "elite" ? ["DisableViaHeader Yes"] : []),
    ...(mode === "transparent" ? ["XTinyproxy Yes"] : []),
    ...(options.basicAuth ? [`BasicAuth ${options.basicAuth.username} ${options.basicAuth.password}`] : []),
  ];
  const config = join(dir.path, "tinyproxy.conf");
  await writeFile(config, `${lines.join("\n")}\n`);
  const daemon = await startPeerProcess({ name: "tinyproxy", command: binary, args: ["-d", "-c", config], port }).catch(async (error: unknown) => {
    await dir.remove();
    throw error;
  });
  return { protocol: "http", host: "127.0.0.1", port, ...(options.basicAuth ? { credentials: options.basicAuth } : {}), egressAddress, stop: composeStop(daemon, dir) };
}

export interface SquidOptions {
  /** on: X-Forwarded-For carries the client (transparent); off: "unknown" (anonymous). @defaultValue "on" */
  forwardedFor?: "on" | "off";
  basicAuth?: PeerCredentials;
  /** @defaultValue PEER_EGRESS.squid */
  egressAddress?: string;
}

/** squid: HTTP absolute-form and CONNECT, optional Basic auth (basic_ncsa_auth, APR1 hash from openssl). */
export async function startSquid(options: SquidOptions = {}): Promise<ProxyPeer> {
  const binary = requirePeerBinary("squid");
  const egressAddress = options.egressAddress ?? PEER_EGRESS.squid;
  const dir = await makePeerDir("squid");
  const port = await freePort();
  const auth: string[] = [];
  if (options.basicAuth) {
    const { stdout } = await run(requirePeerBinary("openssl"), ["passwd", "-apr1", options.basicAuth.password]);
    const passwd = join(dir.path, "passwd");
    await writeFile(passwd, `${options.basicAuth.username}:${stdout.trim()}\n`, { mode: 0o644 });
    auth.push(`auth_param basic program /usr/lib/squid/basic_ncsa_auth ${passwd}`, "acl authed proxy_auth REQUIRED");
  }
  const lines = [
    `http_port 127.0.0.1:${port}`,
    `pid_filename ${join(dir.path, "squid.pid")}`,
    `cache_log ${join(dir.path, "cache.log")}`,
    "access_log none",
    "netdb_filename none",
    `coredump_dir ${dir.path}`,
    "cache deny all",
    "cache_mem 8 MB",
    "shutdown_lifetime 1 seconds",
    `forwarded_for ${options.forwardedFor ?? "on"}`,
    `tcp_outgoing_address ${egressAddress}`,
    ...auth,
    options.basicAuth ? "http_access allow localhost authed" : "http_access allow localhost",
    "http_access deny all",
  ];
  const config = join(dir.path, "squid.conf");
  await writeFile(config, `${lines.join("\n")}\n`);
  const daemon = await startPeerProcess({ name: "squid", command: binary, args: ["-N", "-f", config], cwd: dir.path, port, readyTimeoutMs: 20_000 }).catch(
    async (error: unknown) => {
      await dir.remove();
      throw error;
    },
  );
  return { protocol: "http", host: "127.0.0.1", port, ...(options.basicAuth ? { credentials: options.basicAuth } : {}), egressAddress, stop: composeStop(daemon, dir) };
}

export interface DanteOptions {
  /**
   * SOCKS5 username auth. dante checks system accounts, so a throwaway
   * account is created (root only) and removed at stop; SOCKS4 is then refused.
   */
  auth?: boolean;
  /** @defaultValue PEER_EGRESS.dante */
  egressAddress?: string;
}

/** Runs a command and fails with its stderr. */
async function runOrThrow(command: string, args: string[], input?: string): Promise<void> {
  const child = execFile(command, args);
  if (input !== undefined) child.stdin?.end(input);
  await new Promise<void>((resolve, reject) => {
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${command} ${args.join(" ")} failed (${code}): ${stderr}`))));
  });
}

/** dante (danted): SOCKS4 and SOCKS5 without auth, or SOCKS5 with RFC 1929 user/password. `protocol` says socks5; the same port speaks socks4 without auth. */
export async function startDante(options: DanteOptions = {}): Promise<ProxyPeer> {
  const binary = requirePeerBinary("danted");
  const egressAddress = options.egressAddress ?? PEER_EGRESS.dante;
  let credentials: PeerCredentials | undefined;
  if (options.auth) {
    if (process.getuid?.() !== 0) throw new Error("dante with username auth needs root (it checks system accounts)");
    credentials = { username: `roost${randomBytes(4).toString("hex")}`, password: randomBytes(9).toString("base64url") };
    await runOrThrow(requirePeerBinary("useradd"), ["-M", "-s", "/usr/sbin/nologin", credentials.username]);
    await runOrThrow(requirePeerBinary("chpasswd"), [], `${credentials.username}:${credentials.password}\n`);
  }
  const removeUser = credentials ? () => runOrThrow(requirePeerBinary("userdel"), [credentials.username]) : undefined;
  const dir = await makePeerDir("dante");
  try {
    const port = await freePort();
    const method = options.auth ? "username" : "none";
    const config = [
      "logoutput: stderr",
      `internal: 127.0.0.1 port = ${port}`,
      `external: ${egressAddress}`,
      "clientmethod: none",
      `socksmethod: ${method}`,
      "user.privileged: root",
      "user.unprivileged: nobody",
      "client pass {",
      "  from: 127.0.0.0/8 to: 0.0.0.0/0",
      "  log: error",
      "}",
      "socks pass {",
      "  from: 127.0.0.0/8 to: 0.0.0.0/0",
      "  command: connect",
      "  log: error",
      "}",
    ].join("\n");
    const file = join(dir.path, "danted.conf");
    await writeFile(file, `${config}\n`);
    const peer = await startPeerProcess({ name: "danted", command: binary, args: ["-f", file, "-p", join(dir.path, "danted.pid")], port });
    return { protocol: "socks5", host: "127.0.0.1", port, ...(credentials ? { credentials } : {}), egressAddress, stop: composeStop(peer, dir, removeUser) };
  } catch (error) {
    await dir.remove();
    await removeUser?.().catch(() => undefined);
    throw error;
  }
}

export interface MicrosocksOptions {
  auth?: PeerCredentials;
  /** @defaultValue PEER_EGRESS.microsocks */
  egressAddress?: string;
}

/** microsocks: SOCKS5 only, optional user/password (never `-1`, which whitelists an address after one login). */
export async function startMicrosocks(options: MicrosocksOptions = {}): Promise<ProxyPeer> {
  const binary = requirePeerBinary("microsocks");
  const egressAddress = options.egressAddress ?? PEER_EGRESS.microsocks;
  const dir = await makePeerDir("microsocks");
  const port = await freePort();
  const args = ["-i", "127.0.0.1", "-p", String(port), "-b", egressAddress, ...(options.auth ? ["-u", options.auth.username, "-P", options.auth.password] : [])];
  const daemon = await startPeerProcess({ name: "microsocks", command: binary, args, port }).catch(async (error: unknown) => {
    await dir.remove();
    throw error;
  });
  return { protocol: "socks5", host: "127.0.0.1", port, ...(options.auth ? { credentials: options.auth } : {}), egressAddress, stop: composeStop(daemon, dir) };
}
