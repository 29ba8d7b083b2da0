import { UploadIdentities } from "./upload-identities.js";

describe("UploadIdentities", () => {
  it("numbers distinct proxies in order of first appearance and counts repeated lines", () => {
    const set = new UploadIdentities();
    expect(set.add(0x01020304, 80, "", "", null)).toBe(-1);
    expect(set.add(0x01020304, 81, "", "", "http")).toBe(-2);
    expect(set.add(0x01020304, 80, "", "", "socks5")).toBe(0);
    expect(set.add(0x01020304, 80, "", "", null)).toBe(0);
    expect(set.size).toBe(2);
    expect(set.lines(0)).toBe(3);
    expect(set.lines(1)).toBe(1);
    // The scheme of the first line is kept.
    expect(set.scheme(0)).toBeNull();
    expect(set.scheme(1)).toBe("http");
    expect([set.ip(1), set.port(1)]).toEqual([0x01020304, 81]);
  });

  it("keeps credentials part of the identity, case-sensitive, with ':' and NUL-free separators not confused", () => {
    const set = new UploadIdentities();
    const ip = 0xc0000201;
    const variants: [string, string][] = [
      ["", ""],
      ["user", "pass"],
      ["User", "pass"],
      ["user", "Pass"],
      ["user:pass", ""],
      ["user", ":pass"],
      ["use", "rpass"],
      ["ü", "p\\t"],
    ];
    variants.forEach(([u, p], i) => expect(set.add(ip, 8080, u, p, null)).toBe(-(i + 1)));
    variants.forEach(([u, p], i) => expect(set.add(ip, 8080, u, p, null)).toBe(i));
    expect(set.username(7)).toBe("ü");
    expect(set.password(7)).toBe("p\\t");
    expect(set.size).toBe(variants.length);
  });

  it("stays exact across growth, the largest address and port, and many credentials on one address", () => {
    const set = new UploadIdentities();
    const n = 150_000;
    const address = (i: number): number => (i * 2654435761) >>> 0;
    const wrong: string[] = [];
    const check = (got: number, want: number, what: string): void => {
      if (got !== want && wrong.length < 5) wrong.push(`${what}: ${got} != ${want}`);
    };
    for (let i = 0; i < n; i++) check(set.add(address(i), 1 + (i % 65535), "", "", null), -(i + 1), `new ${i}`);
    // One address:port with thousands of users (rotating-gateway lists look like this).
    for (let i = 0; i < 5000; i++) check(set.add(0xffffffff, 65535, `user-${i}`, "x", null), -(n + i + 1), `new user ${i}`);
    for (let i = 0; i < n; i += 97) check(set.add(address(i), 1 + (i % 65535), "", "", null), i, `again ${i}`);
    for (let i = 0; i < 5000; i += 7) check(set.add(0xffffffff, 65535, `user-${i}`, "x", null), n + i, `user again ${i}`);
    expect(wrong).toEqual([]);
    expect(set.size).toBe(n + 5000);
    expect(set.ip(n)).toBe(0xffffffff);
    expect(set.port(n)).toBe(65535);
  });

  it("cannot be made to pile lines onto one slot: lines chosen to collide under a fixed mix spread out", () => {
    // A fixed (unseeded) mix, as a table without a per-process seed would use, and the lines an uploader could
    // compute from it: for each port, the address whose mix is the same 32-bit value, so
    // every line of the upload probed past all the earlier ones (quadratic).
    const fixedMix = (ip: number, port: number): number => {
      let h = Math.imul(ip ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(port + 0x632be5ab, 0xc2b2ae35);
      h ^= h >>> 15;
      h = Math.imul(h, 0x2c1b3c6d);
      return h ^ (h >>> 13);
    };
    const inverse = (a: number): number => {
      let x = a;
      for (let i = 0; i < 5; i++) x = Math.imul(x, 2 - Math.imul(a, x));
      return x;
    };
    const target = 0x12345678;
    const lines: [number, number][] = [];
    for (let port = 1; port <= 30_000; port++) {
      const ip = (Math.imul(target ^ Math.imul(port + 0x632be5ab, 0xc2b2ae35), inverse(0x85ebca6b)) ^ 0x9e3779b9) >>> 0;
      lines.push([ip, port]);
    }
    expect(new Set(lines.map(([ip, port]) => fixedMix(ip, port))).size).toBe(1);

    const set = new UploadIdentities();
    lines.forEach(([ip, port], i) => expect(set.add(ip, port, "", "", null)).toBe(-(i + 1)));
    // A fixed hash makes the 30,000th line probe 29,999 slots; at most half full, a keyed
    // hash leaves runs of a few dozen at most.
    expect(set.longestProbe).toBeLessThan(100);
    lines.forEach(([ip, port], i) => expect(set.add(ip, port, "", "", null)).toBe(i));
  });

  it("remembers refusals", () => {
    const set = new UploadIdentities();
    set.add(1, 1, "", "", null);
    set.add(2, 1, "", "", null);
    set.refuse(1);
    expect(set.refused(0)).toBe(false);
    expect(set.refused(1)).toBe(true);
  });
});
