import ipaddr from "ipaddr.js";

import { parseIpv4 } from "./ipv4.js";

/** Why an address is not a public Internet host. */
export type ReservedKind =
  | "this-network"
  | "private"
  | "shared-address-space"
  | "loopback"
  | "link-local"
  | "ietf-protocol-assignments"
  | "documentation"
  | "benchmarking"
  | "multicast"
  | "reserved"
  | "metadata"
  | "unspecified"
  | "unique-local"
  | "site-local"
  | "discard"
  | "nat64-local"
  | "not-global-unicast";

/**
 * IPv4 ranges that are never a proxy on the public Internet (IANA's
 * special-purpose registry, RFC 6890 and successors). Uploads refuse them and
 * the outbound guard never dials them unless ALLOW_PRIVATE_NETWORK_TARGETS.
 */
export const RESERVED_IPV4_RANGES: readonly { cidr: string; kind: ReservedKind }[] = [
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

/** How an IPv6 range carries an IPv4 address that must be checked in its place. */
type Ipv4Embedding = "last-32-bits" | "6to4" | "teredo";

/**
 * IPv6 ranges the guard treats specially, most specific first. Ranges with
 * `embeds` are judged by the IPv4 address inside them; everything outside
 * 2000::/3 (global unicast) is refused as not-global-unicast.
 */
export const RESERVED_IPV6_RANGES: readonly { cidr: string; kind: ReservedKind; embeds?: Ipv4Embedding }[] = [
  { cidr: "::/128", kind: "unspecified" },
  { cidr: "::1/128", kind: "loopback" },
  { cidr: "::ffff:0:0/96", kind: "reserved", embeds: "last-32-bits" },
  { cidr: "::ffff:0:0:0/96", kind: "reserved", embeds: "last-32-bits" },
  { cidr: "64:ff9b::/96", kind: "reserved", embeds: "last-32-bits" },
  { cidr: "64:ff9b:1::/48", kind: "nat64-local" },
  { cidr: "100::/64", kind: "discard" },
  { cidr: "2001::/32", kind: "reserved", embeds: "teredo" },
  { cidr: "2001:2::/48", kind: "benchmarking" },
  { cidr: "2001:db8::/32", kind: "documentation" },
  { cidr: "2002::/16", kind: "reserved", embeds: "6to4" },
  { cidr: "3fff::/20", kind: "documentation" },
  { cidr: "fc00::/7", kind: "unique-local" },
  { cidr: "fe80::/10", kind: "link-local" },
  { cidr: "fec0::/10", kind: "site-local" },
  { cidr: "ff00::/8", kind: "multicast" },
];

/** Cloud instance-metadata endpoints: named apart so logs and errors say what was aimed at. */
export const METADATA_ADDRESSES: readonly string[] = ["169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254"];

/** [first, last, kind] numeric bounds of each IPv4 range, sorted by first. */
const bounds: readonly (readonly [number, number, ReservedKind])[] = RESERVED_IPV4_RANGES.map(({ cidr, kind }) => {
  const [base = "", bits = ""] = cidr.split("/");
  const size = 2 ** (32 - Number(bits));
  const first = parseIpv4(base);
  return [first, first + size - 1, kind] as const;
}).sort((a, b) => a[0] - b[0]);

const ipv6Ranges = RESERVED_IPV6_RANGES.map((range) => ({ ...range, parsed: ipaddr.IPv6.parseCIDR(range.cidr) }));
const globalUnicast = ipaddr.IPv6.parseCIDR("2000::/3");
const metadata = new Set(METADATA_ADDRESSES.map((text) => ipaddr.parse(text).toNormalizedString()));

/** The reserved range an IPv4 address (an unsigned 32-bit number) lies in, or null. */
export function reservedIpv4Kind(value: number): ReservedKind | null {
  for (const [first, last, kind] of bounds) {
    if (value < first) return null;
    if (value <= last) return kind;
  }
  return null;
}

/** True when the address (an unsigned 32-bit number) lies in a reserved range. */
export function isReservedIpv4(value: number): boolean {
  return reservedIpv4Kind(value) !== null;
}

/** What the guard knows about one address. */
export interface AddressClass {
  /** Canonical text: dotted quad, or RFC 5952 IPv6 without zone. */
  address: string;
  family: 4 | 6;
  /** Why it is not a public host; null for a public address. */
  reserved: ReservedKind | null;
  /** The IPv4 address an IPv6 form carries (mapped, NAT64, 6to4, Teredo) that decided `reserved`. */
  embeddedIpv4?: string;
}

function ipv4Number(octets: readonly number[]): number {
  return (((octets[0] ?? 0) * 256 + (octets[1] ?? 0)) * 256 + (octets[2] ?? 0)) * 256 + (octets[3] ?? 0);
}

function classifyIpv4(address: ipaddr.IPv4): AddressClass {
  const text = address.toString();
  const reserved = metadata.has(text) ? "metadata" : reservedIpv4Kind(ipv4Number(address.octets));
  return { address: text, family: 4, reserved };
}

function embeddedIpv4(bytes: readonly number[], embedding: Ipv4Embedding): ipaddr.IPv4[] {
  const at = (from: number) => new ipaddr.IPv4([bytes[from] ?? 0, bytes[from + 1] ?? 0, bytes[from + 2] ?? 0, bytes[from + 3] ?? 0]);
  if (embedding === "last-32-bits") return [at(12)];
  if (embedding === "6to4") return [at(2)];
  // Teredo: the server's address in bits 32-63, the client's in the last 32 bits, inverted.
  const client = new ipaddr.IPv4([12, 13, 14, 15].map((i) => (bytes[i] ?? 0) ^ 0xff));
  return [at(4), client];
}

function classifyIpv6(address: ipaddr.IPv6): AddressClass {
  const text = new ipaddr.IPv6(address.parts).toRFC5952String();
  if (metadata.has(address.toNormalizedString())) return { address: text, family: 6, reserved: "metadata" };
  for (const range of ipv6Ranges) {
    if (!address.match(range.parsed)) continue;
    if (!range.embeds) return { address: text, family: 6, reserved: range.kind };
    for (const inner of embeddedIpv4(address.toByteArray(), range.embeds)) {
      const verdict = classifyIpv4(inner);
      if (verdict.reserved) return { address: text, family: 6, reserved: verdict.reserved, embeddedIpv4: verdict.address };
    }
    return { address: text, family: 6, reserved: null };
  }
  if (!address.match(globalUnicast)) return { address: text, family: 6, reserved: "not-global-unicast" };
  return { address: text, family: 6, reserved: null };
}

/**
 * Classifies an IP literal in any form a resolver or URL parser accepts:
 * dotted quad, IPv6 (zone ids ignored), and the numeric IPv4 forms
 * `0x7f000001`, `2130706433`, `017700000001`, `127.1`. Null when not an IP.
 */
export function classifyAddress(text: string): AddressClass | null {
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(bare);
  } catch {
    return null;
  }
  return parsed instanceof ipaddr.IPv4 ? classifyIpv4(parsed) : classifyIpv6(parsed);
}
