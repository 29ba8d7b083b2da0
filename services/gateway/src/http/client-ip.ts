import ipaddr from "ipaddr.js";

/** A CIDR, or a bare address taken as a one-host range (`10.0.0.5` = `10.0.0.5/32`). */
function parseRange(cidr: string): [ipaddr.IPv4 | ipaddr.IPv6, number] {
  try {
    if (cidr.includes("/")) return ipaddr.parseCIDR(cidr);
    const address = ipaddr.parse(cidr);
    return [address, address.kind() === "ipv4" ? 32 : 128];
  } catch {
    throw new Error(`TRUSTED_PROXY_CIDRS: not a CIDR: ${cidr}`);
  }
}

/**
 * Express `trust proxy` predicate: only a hop whose address is inside one of
 * TRUSTED_PROXY_CIDRS may set X-Forwarded-For. With none configured, the
 * socket address is the client, so the header cannot be spoofed.
 */
export function trustProxyPredicate(cidrs: readonly string[]): (address: string) => boolean {
  const ranges = cidrs.map(parseRange);
  return (address) => {
    if (ranges.length === 0) return false;
    let ip: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      ip = ipaddr.process(address);
    } catch {
      return false;
    }
    return ranges.some(([range, bits]) => ip.kind() === range.kind() && ip.match([range, bits]));
  };
}

/** True for 127.0.0.0/8 and ::1 (also as IPv4-mapped IPv6). */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  try {
    return ipaddr.process(address).range() === "loopback";
  } catch {
    return false;
  }
}
