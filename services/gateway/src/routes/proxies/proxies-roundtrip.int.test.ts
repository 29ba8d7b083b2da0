import { formatIpv4, isReservedIpv4, parseProxyLine } from "@roost/net";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";

/** A small seeded generator (mulberry32): every run checks the same cases, and a failure names its seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const USER_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-ü";
const PASS_CHARS = `${USER_CHARS}:#!$%^&*()+=[]{}|~,;'"?/`;

interface Expected {
  line: string;
  /** The export's `ip:port:username:password` line (credential-free: `ip:port`). */
  exported: string;
}

function generate(next: () => number, count: number): Expected[] {
  const pick = (chars: string, min: number, max: number): string => {
    const length = min + Math.floor(next() * (max - min + 1));
    let text = "";
    for (let i = 0; i < length; i++) text += chars[Math.floor(next() * chars.length)];
    return text;
  };
  const cases: Expected[] = [];
  while (cases.length < count) {
    const address = Math.floor(next() * 4294967296);
    if (isReservedIpv4(address)) continue;
    const ip = formatIpv4(address);
    const port = 1 + Math.floor(next() * 65535);
    const withCredentials = next() < 0.5;
    const username = withCredentials ? pick(USER_CHARS, 1, 12) : "";
    // `@` only where the format cannot mistake it for the host separator.
    const format = Math.floor(next() * (withCredentials ? 5 : 4));
    let password = withCredentials ? pick(format === 2 ? PASS_CHARS : `${PASS_CHARS}@`, 0, 16) : "";
    // `user://...@ip:port` reads as a URL with an unknown scheme (docs/proxies.md).
    if (format === 1 && password.startsWith("//")) password = password.slice(2);
    const scheme = ["http", "https", "socks4", "socks5"][Math.floor(next() * 4)] ?? "http";
    let line: string;
    if (!withCredentials) {
      line = [`${ip}:${port}`, `${ip} ${port}`, `${scheme}://${ip}:${port}`, `${ip}\t${port}  # note`][format] ?? "";
    } else {
      line =
        [
          `${ip}:${port}:${username}:${password}`,
          `${username}:${password}@${ip}:${port}`,
          `${ip}:${port}@${username}:${password}`,
          `${scheme}://${username}:${password}@${ip}:${port}`,
          ` ${ip}:${port}:${username}:${password} `,
        ][format] ?? "";
    }
    cases.push({ line, exported: withCredentials ? `${ip}:${port}:${username}:${password}` : `${ip}:${port}` });
  }
  return cases;
}

describe("upload → export round trip (property)", () => {
  let h: GatewayHarness;
  beforeAll(async () => {
    h = await startGatewayHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it.each([1, 2, 3])("every valid proxy line survives, seed %i", async (seed) => {
    const { token } = await h.register();
    const next = random(seed);
    const cases = generate(next, 1500);
    // The parser alone first: a failure here names the lines.
    const misread = cases.filter((c) => {
      const verdict = parseProxyLine(c.line);
      if (verdict.kind !== "proxy") return true;
      const { ip, port, username, password } = verdict.proxy;
      return (username === "" ? `${ip}:${port}` : `${ip}:${port}:${username}:${password}`) !== c.exported;
    });
    expect({ seed, misread: misread.map((c) => c.line) }).toEqual({ seed, misread: [] });
    // Duplicates (the same proxy written again, possibly in another format) add lines, not rows.
    const lines = [...cases.map((c) => c.line), ...cases.filter(() => next() < 0.1).map((c) => c.line)];
    const file = `\uFEFF${lines.join(seed === 2 ? "\r\n" : "\n")}`;
    const upload = await h.http
      .post("/api/addProxies")
      .set("Authorization", `Bearer ${token}`)
      .attach("file", Buffer.from(file, "utf8"), "proxies.txt");
    expect(upload.status).toBe(200);
    const expected = new Set(cases.map((c) => c.exported));
    expect(upload.body).toMatchObject({ proxyCount: expected.size, details: { submittedCount: lines.length, parsedCount: lines.length, blacklistedCount: 0 } });

    const exported = await h.http
      .post("/api/user/export")
      .set("Authorization", `Bearer ${token}`)
      .send({ outputFormat: "ip:port:username:password" });
    expect(exported.status).toBe(200);
    const got = exported.text.split("\n").filter((l) => l !== "");
    expect(got).toHaveLength(expected.size);
    const missing = [...expected].filter((e) => !got.includes(e));
    expect({ seed, missing }).toEqual({ seed, missing: [] });

    const plain = await h.http.post("/api/user/export").set("Authorization", `Bearer ${token}`).send({});
    const ipPorts = new Set(cases.map((c) => c.exported.split(":").slice(0, 2).join(":")));
    expect(new Set(plain.text.split("\n").filter((l) => l !== ""))).toEqual(ipPorts);

    // A templated export with the scheme in front is an upload another user can read back, hints included.
    const template = { outputFormat: "protocol://ip:port:username:password" };
    const withScheme = await h.http.post("/api/user/export").set("Authorization", `Bearer ${token}`).send(template);
    expect(withScheme.status).toBe(200);
    const other = await h.register();
    const reupload = await h.http
      .post("/api/addProxies")
      .set("Authorization", `Bearer ${other.token}`)
      .attach("file", Buffer.from(withScheme.text, "utf8"), "exported.txt");
    expect(reupload.body).toMatchObject({ proxyCount: expected.size, details: { parsedCount: expected.size, invalidFormatCount: 0 } });
    const again = await h.http.post("/api/user/export").set("Authorization", `Bearer ${other.token}`).send(template);
    const sorted = (text: string): string[] => text.split("\n").filter((l) => l !== "").sort();
    expect(sorted(again.text)).toEqual(sorted(withScheme.text));
  });
});
