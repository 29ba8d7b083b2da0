/** Anonymity as the contract names it; `N/A` when not alive. */
export type AnonymityLevel = "elite" | "anonymous" | "transparent" | "N/A";

/**
 * Reads a judge's echo of the request: `transparent` when it shows one of
 * the checker's own addresses, `anonymous` when it shows one of the proxy
 * headers with a non-empty value, else `elite` (DESIGN.md "Checking").
 */
export function createAnonymityClassifier(proxyHeaders: readonly string[]): (body: string, ownAddresses: readonly string[]) => AnonymityLevel {
  // A header as judges print it: `Via: x`, `HTTP_VIA = x`, `"X-Forwarded-For": "x"`, any case, `-` or `_`.
  const shown = proxyHeaders.map((name) => {
    const words = name.split(/[-_]/).map((word) => word.replace(/[^A-Za-z0-9]/g, ""));
    return new RegExp(`(?:^|[^A-Za-z0-9_-])(?:HTTP_)?${words.join("[-_]")}"?[ \\t]*[:=][ \\t]*"?[^\\s",}]`, "im");
  });
  return (body, ownAddresses) => {
    if (ownAddresses.some((address) => address !== "" && containsAddress(body, address))) return "transparent";
    if (shown.some((pattern) => pattern.test(body))) return "anonymous";
    return "elite";
  };
}

/** True when `address` appears in `text` as a whole address, not inside a longer one (1.2.3.4 in 11.2.3.45). */
function containsAddress(text: string, address: string): boolean {
  for (let at = text.indexOf(address); at !== -1; at = text.indexOf(address, at + 1)) {
    const before = text.charCodeAt(at - 1);
    const after = text.charCodeAt(at + address.length);
    if (!isAddressChar(before) && !isAddressChar(after)) return true;
  }
  return false;
}

const isAddressChar = (code: number): boolean =>
  (code >= 48 && code <= 57) || code === 46 || code === 58 || (code >= 97 && code <= 102) || (code >= 65 && code <= 70);

/** IPv4 addresses a text shows (a direct judge answer): how the checker learns its own address without ip_lookup. */
export function addressesIn(text: string): string[] {
  const found = new Set<string>();
  for (const match of text.matchAll(/(?<![0-9.])(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}(?![0-9.])/g)) found.add(match[0]);
  return [...found];
}
