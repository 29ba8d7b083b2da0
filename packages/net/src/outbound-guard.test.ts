import { classifyAddress, isReservedIpv4, OutboundBlockedError, OutboundGuard, OutboundUnresolvedError, parseIpv4, type ReservedKind } from "./index.js";

/** Every address form the guard must refuse, with the reason it must give. */
const refused: [string, ReservedKind][] = [
  // IPv4 loopback in every numeric form a resolver or URL parser accepts
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback"],
  ["0x7f000001", "loopback"],
  ["2130706433", "loopback"],
  ["017700000001", "loopback"],
  ["127.1", "loopback"],
  ["0177.0.0.1", "loopback"],
  ["0x7f.0.0.1", "loopback"],
  // private, link-local, CGNAT, multicast, unspecified, broadcast, documentation
  ["10.1.2.3", "private"],
  ["172.16.0.1", "private"],
  ["172.31.255.255", "private"],
  ["192.168.1.1", "private"],
  ["0xc0a80101", "private"],
  ["169.254.1.1", "link-local"],
  ["100.64.0.1", "shared-address-space"],
  ["100.127.255.255", "shared-address-space"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.250", "multicast"],
  ["0.0.0.0", "this-network"],
  ["0", "this-network"],
  ["255.255.255.255", "reserved"],
  ["192.0.2.10", "documentation"],
  ["198.18.0.1", "benchmarking"],
  // cloud metadata
  ["169.254.169.254", "metadata"],
  ["0xa9fea9fe", "metadata"],
  ["100.100.100.200", "metadata"],
  ["fd00:ec2::254", "metadata"],
  ["[fd00:ec2::254]", "metadata"],
  // IPv6
  ["::1", "loopback"],
  ["[::1]", "loopback"],
  ["0:0:0:0:0:0:0:1", "loopback"],
  ["::", "unspecified"],
  ["fe80::1", "link-local"],
  ["fe80::1%eth0", "link-local"],
  ["fc00::1", "unique-local"],
  ["fd12:3456::1", "unique-local"],
  ["ff02::1", "multicast"],
  ["fec0::1", "site-local"],
  ["100::1", "discard"],
  ["2001:db8::1", "documentation"],
  ["64:ff9b:1::1", "nat64-local"],
  ["::7f00:1", "not-global-unicast"],
  // IPv6 forms that carry an IPv4 address: the embedded address decides
  ["::ffff:127.0.0.1", "loopback"],
  ["::ffff:7f00:1", "loopback"],
  ["[::ffff:127.0.0.1]", "loopback"],
  ["::ffff:10.0.0.1", "private"],
  ["::ffff:169.254.169.254", "metadata"],
  ["::ffff:0:127.0.0.1", "loopback"],
  ["64:ff9b::127.0.0.1", "loopback"],
  ["64:ff9b::7f00:1", "loopback"],
  ["64:ff9b::a9fe:a9fe", "metadata"],
  ["64:ff9b::c0a8:101", "private"],
  ["2002:7f00:1::1", "loopback"],
  ["2002:c0a8:101::", "private"],
  // Teredo: server 127.0.0.1, or client 10.0.0.1 stored inverted (f5ff:fffe)
  ["2001:0:7f00:1::1", "loopback"],
  ["2001:0:808:808::f5ff:fffe", "private"],
];

const allowed: string[] = [
  "1.1.1.1",
  "8.8.8.8",
  "93.184.216.34",
  "100.63.255.255",
  "100.128.0.0",
  "172.15.255.255",
  "172.32.0.0",
  "169.253.255.255",
  "0x08080808",
  "2606:4700:4700::1111",
  "2a00:1450:4001::200e",
  "::ffff:8.8.8.8",
  "64:ff9b::808:808",
  "2002:808:808::1",
  "2001:0:808:808::f7f7:f7f7",
];

describe("classifyAddress", () => {
  it.each(refused)("%s is %s", (text, kind) => {
    expect(classifyAddress(text)?.reserved).toBe(kind);
  });

  it.each(allowed)("%s is public", (text) => {
    expect(classifyAddress(text)?.reserved).toBeNull();
  });

  it("names the IPv4 address an IPv6 form carries", () => {
    expect(classifyAddress("64:ff9b::7f00:1")).toEqual({ address: "64:ff9b::7f00:1", family: 6, reserved: "loopback", embeddedIpv4: "127.0.0.1" });
    expect(classifyAddress("::ffff:127.0.0.1")).toMatchObject({ family: 6, embeddedIpv4: "127.0.0.1" });
  });

  it("gives the canonical address for numeric forms", () => {
    expect(classifyAddress("0x7f000001")).toEqual({ address: "127.0.0.1", family: 4, reserved: "loopback" });
    expect(classifyAddress("2130706433")?.address).toBe("127.0.0.1");
    expect(classifyAddress("017700000001")?.address).toBe("127.0.0.1");
    expect(classifyAddress("127.1")?.address).toBe("127.0.0.1");
  });

  it.each(["localhost", "example.com", "1.2.3.4.5", "127.0.0.1.", "08.1.1.1", "", "::1::1"])("%s is not an IP literal", (text) => {
    expect(classifyAddress(text)).toBeNull();
  });

  it("agrees with the upload's numeric check on every IPv4 range boundary", () => {
    for (const text of ["0.255.255.255", "1.0.0.0", "9.255.255.255", "10.0.0.0", "126.255.255.255", "127.0.0.0", "128.0.0.0", "223.255.255.255", "224.0.0.0"]) {
      expect(classifyAddress(text)?.reserved !== null).toBe(isReservedIpv4(parseIpv4(text)));
    }
  });
});

describe("OutboundGuard", () => {
  const resolveTo =
    (...addresses: string[]) =>
    async () =>
      addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));

  it("refuses literals without resolving them", async () => {
    let lookups = 0;
    const guard = new OutboundGuard({ resolveAll: async () => (lookups++, []) });
    for (const [text, kind] of refused) {
      const error = await guard.resolve(text).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(OutboundBlockedError);
      expect(error).toMatchObject({ code: "OUTBOUND_BLOCKED", host: text, reason: kind });
    }
    expect(lookups).toBe(0);
  });

  it("passes public literals as their canonical address", async () => {
    const guard = new OutboundGuard();
    await expect(guard.resolve("0x08080808")).resolves.toEqual({ host: "0x08080808", address: "8.8.8.8", family: 4, literal: true });
    await expect(guard.resolve("[2606:4700:4700::1111]")).resolves.toMatchObject({ address: "2606:4700:4700::1111", family: 6, literal: true });
  });

  it("refuses a name when any address it resolves to is reserved", async () => {
    const guard = new OutboundGuard({ resolveAll: resolveTo("8.8.8.8", "10.0.0.5") });
    await expect(guard.resolve("mixed.example")).rejects.toMatchObject({ code: "OUTBOUND_BLOCKED", host: "mixed.example", address: "10.0.0.5", reason: "private" });
  });

  it("refuses a name resolving to a mapped or NAT64 loopback", async () => {
    await expect(new OutboundGuard({ resolveAll: resolveTo("::ffff:127.0.0.1") }).resolve("a.example")).rejects.toMatchObject({ reason: "loopback" });
    await expect(new OutboundGuard({ resolveAll: resolveTo("64:ff9b::a9fe:a9fe") }).resolve("b.example")).rejects.toMatchObject({ reason: "metadata" });
  });

  it("returns the first checked address of a public name", async () => {
    const guard = new OutboundGuard({ resolveAll: resolveTo("2606:4700::1", "1.1.1.1") });
    await expect(guard.resolve("public.example")).resolves.toEqual({ host: "public.example", address: "2606:4700::1", family: 6, literal: false });
  });

  it("resolves localhost with the system resolver and refuses it", async () => {
    await expect(new OutboundGuard().resolve("localhost")).rejects.toMatchObject({ code: "OUTBOUND_BLOCKED", reason: "loopback" });
  });

  it("reports a name without addresses as unresolved", async () => {
    await expect(new OutboundGuard({ resolveAll: resolveTo() }).resolve("nothing.example")).rejects.toBeInstanceOf(OutboundUnresolvedError);
    const failing = new OutboundGuard({ resolveAll: () => Promise.reject(new Error("ENOTFOUND")) });
    await expect(failing.resolve("nothing.example")).rejects.toMatchObject({ code: "OUTBOUND_UNRESOLVED" });
  });

  it("lets every address through with allowPrivateNetworkTargets", async () => {
    const guard = new OutboundGuard({ allowPrivateNetworkTargets: true, resolveAll: resolveTo("10.0.0.5") });
    await expect(guard.resolve("0x7f000001")).resolves.toMatchObject({ address: "127.0.0.1" });
    await expect(guard.resolve("169.254.169.254")).resolves.toMatchObject({ address: "169.254.169.254" });
    await expect(guard.resolve("internal.example")).resolves.toMatchObject({ address: "10.0.0.5" });
  });

  it("lets only what the test predicate names through", async () => {
    const guard = new OutboundGuard({ allowAddress: ({ address }) => address === "127.0.0.9" });
    await expect(guard.resolve("127.0.0.9")).resolves.toMatchObject({ address: "127.0.0.9" });
    await expect(guard.resolve("127.0.0.1")).rejects.toMatchObject({ reason: "loopback" });
  });
});
