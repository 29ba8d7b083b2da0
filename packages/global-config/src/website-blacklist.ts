import { isIP } from "node:net";
import { domainToASCII } from "node:url";

/**
 * Canonical form of a website-blacklist entry: trimmed, lower case, IDN as
 * punycode (what `new URL().hostname` gives), without a leading `*.` (an entry
 * blocks every subdomain anyway) or a trailing dot. The schema then refuses
 * whatever is not a host name.
 */
export function normalizeBlacklistEntry(entry: string): string {
  const trimmed = entry.trim().toLowerCase().replace(/^\*\./, "").replace(/\.$/, "");
  // Only plain IDNs go through the URL host parser: it would also "repair"
  // other input (`x.com/path` -> `x.com`), which the schema must refuse instead.
  return /[^\x00-\x7f]/.test(trimmed) && !/[\s/?#@:\\[\]]/.test(trimmed) ? domainToASCII(trimmed) : trimmed;
}

/**
 * True when `url`'s host is a blacklisted domain or a subdomain of one
 * (`example.com` blocks `example.com` and `api.example.com`, not
 * `notexample.com`). Addresses match only exactly.
 */
export function isBlockedUrl(url: string, blacklist: readonly string[]): boolean {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase().replace(/\.$/, "");
  } catch {
    return false;
  }
  if (host === "") return false;
  // An address has no subdomains: `2.3.4` must not block 1.2.3.4.
  const hostIsAddress = isIP(host) !== 0;
  return blacklist.some((entry) => {
    const domain = normalizeBlacklistEntry(entry);
    if (domain === "") return false;
    if (hostIsAddress || isIP(domain) !== 0) return host === domain;
    return host === domain || host.endsWith(`.${domain}`);
  });
}
