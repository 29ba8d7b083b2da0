import { isLoopback, trustProxyPredicate } from "./client-ip.js";

describe("trustProxyPredicate (TRUSTED_PROXY_CIDRS)", () => {
  it("trusts no hop when no range is configured", () => {
    const trust = trustProxyPredicate([]);
    for (const address of ["127.0.0.1", "::1", "10.0.0.1", "::ffff:127.0.0.1"]) expect(trust(address)).toBe(false);
  });

  it("matches IPv4 ranges, also for IPv4-mapped IPv6 socket addresses", () => {
    const trust = trustProxyPredicate(["127.0.0.1/32", "10.0.0.0/8"]);
    expect(trust("127.0.0.1")).toBe(true);
    expect(trust("::ffff:127.0.0.1")).toBe(true);
    expect(trust("127.0.0.2")).toBe(false);
    expect(trust("10.200.3.4")).toBe(true);
    expect(trust("::ffff:10.200.3.4")).toBe(true);
    expect(trust("11.0.0.1")).toBe(false);
    expect(trust("::1")).toBe(false);
    expect(trust("not an address")).toBe(false);
  });

  it("matches IPv6 ranges only for IPv6 addresses", () => {
    const trust = trustProxyPredicate(["fd00::/8"]);
    expect(trust("fd12:3456::1")).toBe(true);
    expect(trust("fe80::1")).toBe(false);
    expect(trust("127.0.0.1")).toBe(false);
  });

  it("takes a bare address as a one-host range", () => {
    const trust = trustProxyPredicate(["127.0.0.1", "fd00::5"]);
    expect(trust("::ffff:127.0.0.1")).toBe(true);
    expect(trust("127.0.0.2")).toBe(false);
    expect(trust("fd00::5")).toBe(true);
    expect(trust("fd00::6")).toBe(false);
  });

  it("refuses a value that is not a CIDR, naming it", () => {
    expect(() => trustProxyPredicate(["localhost"])).toThrow(/TRUSTED_PROXY_CIDRS: not a CIDR: localhost/);
    expect(() => trustProxyPredicate(["10.0.0.0/33"])).toThrow(/not a CIDR/);
    expect(() => trustProxyPredicate(["300.0.0.1"])).toThrow(/not a CIDR/);
  });
});

describe("isLoopback", () => {
  it.each([
    ["127.0.0.1", true],
    ["127.8.9.10", true],
    ["::1", true],
    ["::ffff:127.0.0.1", true],
    ["10.0.0.1", false],
    ["::ffff:10.0.0.1", false],
    ["", false],
    [undefined, false],
    ["garbage", false],
  ])("%p -> %p", (address, expected) => {
    expect(isLoopback(address)).toBe(expected);
  });
});
