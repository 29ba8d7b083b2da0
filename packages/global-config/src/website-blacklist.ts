/** True when `url`'s host is a blacklisted domain or a subdomain of one. */
export function isBlockedUrl(url: string, blacklist: readonly string[]): boolean {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase().replace(/\.$/, "");
  } catch {
    return false;
  }
  return blacklist.some((entry) => {
    const domain = entry.toLowerCase().replace(/^\*\./, "").replace(/\.$/, "");
    return host === domain || host.endsWith(`.${domain}`);
  });
}
