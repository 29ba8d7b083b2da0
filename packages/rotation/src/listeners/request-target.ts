import type { OutboundGuard } from "@roost/net";

export interface CheckedAuthority {
  /** The URL's host, for a Host header the client left out. */
  host: string;
  blocked: boolean;
}

/** Authorities of request targets checked by each guard; bounded, cleared when full. */
const checkedAuthorities = new WeakMap<OutboundGuard, Map<string, CheckedAuthority>>();
const MAX_CHECKED_AUTHORITIES = 1024;
/** An authority whose URL host depends on nothing else: no userinfo, no escapes, no whitespace. */
const PLAIN_AUTHORITY = /^[A-Za-z0-9.:[\]-]{1,270}$/;

/**
 * The guard's verdict on an absolute-form http:// target, undefined when it is
 * no such URL. The verdict is kept per authority (a crawler sends many paths to
 * one host), so the URL parse and address check run once per host.
 */
export function checkTarget(guard: OutboundGuard, target: string): CheckedAuthority | undefined {
  if (!target.startsWith("http://")) return undefined;
  let end = target.length;
  for (let i = 7; i < end; i++) {
    const code = target.charCodeAt(i);
    // The authority ends at "/", "?", "#" or "\\" (a path separator in http URLs).
    if (code === 0x2f || code === 0x3f || code === 0x23 || code === 0x5c) end = i;
  }
  const authority = target.slice(7, end);
  const cacheable = PLAIN_AUTHORITY.test(authority);
  let cache = checkedAuthorities.get(guard);
  const known = cacheable ? cache?.get(authority) : undefined;
  if (known) return known;
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:") return undefined;
  let blocked = false;
  try {
    guard.checkLiteral(url.hostname.replace(/^\[(.*)\]$/, "$1"));
  } catch {
    blocked = true;
  }
  const checked = { host: url.host, blocked };
  if (cacheable) {
    if (!cache) checkedAuthorities.set(guard, (cache = new Map()));
    if (cache.size >= MAX_CHECKED_AUTHORITIES) cache.clear();
    cache.set(authority, checked);
  }
  return checked;
}
