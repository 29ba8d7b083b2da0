import { parseIpv4 } from "./ipv4.js";

/**
 * IPv4 ranges that are never a proxy on the public Internet (IANA's
 * special-purpose registry, RFC 6890 and successors). Uploads refuse them and
 * the outbound guard never dials them unless ALLOW_PRIVATE_NETWORK_TARGETS.
 */
export const RESERVED_IPV4_RANGES: readonly { cidr: string; kind: string }[] = [
  { cidr: "0.0.0.0/8", kind: "this-network" },
  { cidr: "10.0.0.0/8", kind: "private" },
  { cidr: "100.64.0.0/10", kind: "shared-address-space" },
  { cidr: "127.0.0.0/8", kind: "loopback" },
  { cidr: "169.254.0.0/16", kind: "link-local" },
  { cidr: "172.16.0.0/12", kind: "private" },
  { cidr: "192.0.0.0/24", kind: "ietf-protocol-assignments" },
  { cidr: "192.0.2.0/24", kind: "documentation" },
  { cidr: "192.168.0.0/16", kind: "private" },
  { cidr: "198.18.0.0/15", kind: "benchmarking" },
  { cidr: "198.51.100.0/24", kind: "documentation" },
  { cidr: "203.0.113.0/24", kind: "documentation" },
  { cidr: "224.0.0.0/4", kind: "multicast" },
  { cidr: "240.0.0.0/4", kind: "reserved" },
];

/** [first, last] numeric bounds of each range, sorted by first. */
const bounds: readonly (readonly [number, number])[] = RESERVED_IPV4_RANGES.map(({ cidr }) => {
  const [base = "", bits = ""] = cidr.split("/");
  const size = 2 ** (32 - Number(bits));
  const first = parseIpv4(base);
  return [first, first + size - 1] as const;
}).sort((a, b) => a[0] - b[0]);

/** True when the address (an unsigned 32-bit number) lies in a reserved range. */
export function isReservedIpv4(value: number): boolean {
  for (const [first, last] of bounds) {
    if (value < first) return false;
    if (value <= last) return true;
  }
  return false;
}
