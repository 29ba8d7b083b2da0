import { classifyLine, LineSplitter, parseIpv4, parseProxyLine, scanCommonLine, type CommonLine, type LineVerdict, type SplitLine } from "./index.js";

const proxy = (ip: string, port: number, username = "", password = "", scheme: string | null = null): LineVerdict => ({
  kind: "proxy",
  proxy: { ip, ipNumber: parseIpv4(ip), port, username, password, scheme: scheme as never },
});
const invalid = (reason: string): LineVerdict => ({ kind: "invalid", reason: reason as never });
const EMPTY: LineVerdict = { kind: "empty" };

/** Real-world lines as users paste them, with the verdict each must get. */
const corpus: [string, LineVerdict][] = [
  // ip:port and friends
  ["1.2.3.4:8080", proxy("1.2.3.4", 8080)],
  ["  1.2.3.4:8080  ", proxy("1.2.3.4", 8080)],
  ["1.2.3.4:8080\r", proxy("1.2.3.4", 8080)],
  ["\uFEFF1.2.3.4:8080", proxy("1.2.3.4", 8080)],
  ["001.002.003.004:00080", proxy("1.2.3.4", 80)],
  ["255.255.255.254:65535", proxy("255.255.255.254", 65535)],
  ["0.0.0.1:1", proxy("0.0.0.1", 1)],
  // ip:port:user:pass, the password may contain ':' and '@'
  ["1.2.3.4:8080:alice:s3cret", proxy("1.2.3.4", 8080, "alice", "s3cret")],
  ["1.2.3.4:8080:alice:pa:ss:word", proxy("1.2.3.4", 8080, "alice", "pa:ss:word")],
  ["1.2.3.4:8080:alice:pa::ss", proxy("1.2.3.4", 8080, "alice", "pa::ss")],
  ["1.2.3.4:8080:alice:::", proxy("1.2.3.4", 8080, "alice", "::")],
  ["1.2.3.4:8080:alice:", proxy("1.2.3.4", 8080, "alice", "")],
  // An empty user name with an empty password is no credentials, in every form; with a password it is invalid.
  ["1.2.3.4:8080::", proxy("1.2.3.4", 8080)],
  [":@1.2.3.4:8080", proxy("1.2.3.4", 8080)],
  ["1.2.3.4:8080@:", proxy("1.2.3.4", 8080)],
  ["http://:@1.2.3.4:8080", proxy("1.2.3.4", 8080, "", "", "http")],
  ["1.2.3.4:8080::s3cret", invalid("invalidFormat")],
  ["1.2.3.4:8080@:s3cret", invalid("invalidFormat")],
  ["1.2.3.4:8080:bob@mail.example:pw", proxy("1.2.3.4", 8080, "bob@mail.example", "pw")],
  ["1.2.3.4:8080:user:p@ss:80", proxy("1.2.3.4", 8080, "user", "p@ss:80")],
  ["1.2.3.4:8080:Alice:S3cret", proxy("1.2.3.4", 8080, "Alice", "S3cret")],
  // user:pass@ip:port
  ["alice:s3cret@1.2.3.4:8080", proxy("1.2.3.4", 8080, "alice", "s3cret")],
  ["alice:pa:ss@1.2.3.4:8080", proxy("1.2.3.4", 8080, "alice", "pa:ss")],
  ["alice:p@ss@1.2.3.4:8080", proxy("1.2.3.4", 8080, "alice", "p@ss")],
  ["user:1234:x@1.2.3.4:80", proxy("1.2.3.4", 80, "user", "1234:x")],
  // ip:port@user:pass
  ["1.2.3.4:8080@alice:s3cret", proxy("1.2.3.4", 8080, "alice", "s3cret")],
  ["1.2.3.4:8080@alice:pa:ss", proxy("1.2.3.4", 8080, "alice", "pa:ss")],
  ["1.2.3.4:8080@alice:p@ss", proxy("1.2.3.4", 8080, "alice", "p@ss")],
  // the password looks like a port: the reading with an IPv4 host wins
  ["1.2.3.4:8080@alice:6", proxy("1.2.3.4", 8080, "alice", "6")],
  ["1.2.3.4:8080@2:1", proxy("1.2.3.4", 8080, "2", "1")],
  ["5.6.7.8:80@1.2.3.4:8080", proxy("1.2.3.4", 8080, "5.6.7.8", "80")],
  // schemes
  ["http://1.2.3.4:8080", proxy("1.2.3.4", 8080, "", "", "http")],
  ["HTTPS://1.2.3.4:443/", proxy("1.2.3.4", 443, "", "", "https")],
  ["socks4://1.2.3.4:1080", proxy("1.2.3.4", 1080, "", "", "socks4")],
  ["socks4a://1.2.3.4:1080", proxy("1.2.3.4", 1080, "", "", "socks4")],
  ["socks5://alice:s3cret@1.2.3.4:1080", proxy("1.2.3.4", 1080, "alice", "s3cret", "socks5")],
  ["socks5h://alice:s3cret@1.2.3.4:1080", proxy("1.2.3.4", 1080, "alice", "s3cret", "socks5")],
  ["ftp://1.2.3.4:21", invalid("invalidFormat")],
  ["ftp://user:pass@1.2.3.4:21", invalid("invalidFormat")],
  ["http://", invalid("invalidFormat")],
  // a scheme before the other credential forms (what `protocol://ip:port:username:password` exports)
  ["http://1.2.3.4:8080:alice:s3cret", proxy("1.2.3.4", 8080, "alice", "s3cret", "http")],
  ["SOCKS5://1.2.3.4:1080:alice:pa:ss", proxy("1.2.3.4", 1080, "alice", "pa:ss", "socks5")],
  ["socks5h://1.2.3.4:1080:alice:", proxy("1.2.3.4", 1080, "alice", "", "socks5")],
  ["https://1.2.3.4:443:alice:s3cret/", proxy("1.2.3.4", 443, "alice", "s3cret/", "https")],
  ["http://alice:s3cret@1.2.3.4:8080/", proxy("1.2.3.4", 8080, "alice", "s3cret", "http")],
  ["http://1.2.3.4:8080//", invalid("invalidPort")],
  ["socks5://1.2.3.4:1080:alice:12/", proxy("1.2.3.4", 1080, "alice", "12/", "socks5")],
  ["http://[::1]:8080/", invalid("invalidIpv4")],
  ["socks4://1.2.3.4:1080@alice:s3cret", proxy("1.2.3.4", 1080, "alice", "s3cret", "socks4")],
  ["socks5://1.2.3.4:1080@alice:6", proxy("1.2.3.4", 1080, "alice", "6", "socks5")],
  ["http://1.2.3.4:99999:alice:s3cret", invalid("invalidPort")],
  ["http://1.2.3.256:80:alice:s3cret", invalid("invalidIp")],
  ["http://1.2.3.4:80:alice", invalid("invalidFormat")],
  ["ftp://1.2.3.4:21:alice:s3cret", invalid("invalidFormat")],
  ["http://proxy.example.com:8080", invalid("invalidIp")],
  // whitespace separated
  ["1.2.3.4 8080", proxy("1.2.3.4", 8080)],
  ["1.2.3.4\t8080", proxy("1.2.3.4", 8080)],
  ["1.2.3.4 \t  8080  ", proxy("1.2.3.4", 8080)],
  ["1.2.3.4 99999", invalid("invalidPort")],
  ["proxy.example.com 8080", invalid("invalidIp")],
  ["hello world", invalid("invalidFormat")],
  ["20.20.20.20:80:us\u0000er:pw", invalid("invalidFormat")],
  ["1.2.3.4:80\u0000", invalid("invalidFormat")],
  ["1.2.3.4 8080 US elite", invalid("invalidFormat")],
  // comments
  ["# my proxies", EMPTY],
  ["   # indented comment", EMPTY],
  ["1.2.3.4:8080 # office", proxy("1.2.3.4", 8080)],
  ["1.2.3.4:8080\t#office", proxy("1.2.3.4", 8080)],
  ["1.2.3.4:8080:alice:pa#ss", proxy("1.2.3.4", 8080, "alice", "pa#ss")],
  ["", EMPTY],
  ["   \t ", EMPTY],
  ["\r", EMPTY],
  ["\uFEFF", EMPTY],
  // not an IP: hostnames, bad octets
  ["proxy.example.com:8080", invalid("invalidIp")],
  ["localhost:3128", invalid("invalidIp")],
  ["256.1.1.1:8080", invalid("invalidIp")],
  ["1.2.3:8080", invalid("invalidIp")],
  ["1.2.3.4.5:8080", invalid("invalidIp")],
  ["1.2.3.1000:8080", invalid("invalidIp")],
  ["0x7f.0.0.1:80", invalid("invalidIp")],
  ["1..3.4:80", invalid("invalidIp")],
  ["alice:s3cret@proxy.example.com:8080", invalid("invalidIp")],
  ["proxy.example.com:8080:alice:s3cret", invalid("invalidIp")],
  ["256.1.1.1:99999", invalid("invalidIp")],
  // IPv6 literals
  ["2001:db8::1", invalid("invalidIpv4")],
  ["::1", invalid("invalidIpv4")],
  ["[2001:db8::1]:8080", invalid("invalidIpv4")],
  ["[::ffff:1.2.3.4]:8080", invalid("invalidIpv4")],
  ["alice:s3cret@[2001:db8::1]:8080", invalid("invalidIpv4")],
  ["2001:1234:5678::1", invalid("invalidIpv4")],
  ["2001:db8::1 8080", invalid("invalidIpv4")],
  ["[nonsense]:8080", invalid("invalidIp")],
  // ports
  ["1.2.3.4:0", invalid("invalidPort")],
  ["1.2.3.4:65536", invalid("invalidPort")],
  ["1.2.3.4:123456", invalid("invalidPort")],
  ["1.2.3.4:http", invalid("invalidPort")],
  ["1.2.3.4:", invalid("invalidPort")],
  ["1.2.3.4:-1", invalid("invalidPort")],
  ["1.2.3.4:abc:alice:s3cret", invalid("invalidPort")],
  ["1.2.3.4:8080@alice:s3cret:99999", proxy("1.2.3.4", 8080, "alice", "s3cret:99999")],
  // junk
  ["1.2.3.4", invalid("invalidFormat")],
  ["1.2.3.4:8080:alice", invalid("invalidFormat")],
  ["<html><body>", invalid("invalidFormat")],
  ["Free proxy list updated daily", invalid("invalidFormat")],
  ["@1.2.3.4:8080", invalid("invalidFormat")],
  [":s3cret@1.2.3.4:8080", invalid("invalidFormat")],
  ["alice@1.2.3.4:8080", invalid("invalidFormat")],
  ["1.2.3.4::8080", invalid("invalidFormat")],
  ["1.2.3.4:8080:" + "u".repeat(256) + ":pw", invalid("invalidFormat")],
  ["1.2.3.4:8080:alice:" + "p".repeat(256), invalid("invalidFormat")],
  ["\u0000\u0001\u0002", invalid("invalidFormat")],
];

describe("parseProxyLine", () => {
  it.each(corpus)("%j", (line, expected) => {
    expect(parseProxyLine(line)).toEqual(expected);
  });

  it("gives every line of the corpus exactly one verdict", () => {
    const tally = { empty: 0, proxy: 0, invalidFormat: 0, invalidIp: 0, invalidIpv4: 0, invalidPort: 0 };
    for (const [line] of corpus) {
      const verdict = parseProxyLine(line);
      if (verdict.kind === "invalid") tally[verdict.reason]++;
      else tally[verdict.kind]++;
    }
    expect(Object.values(tally).reduce((a, b) => a + b, 0)).toBe(corpus.length);
  });
});

describe("scanCommonLine (the upload's one-pass reader of the common forms)", () => {
  /** What scanCommonLine finds, as a verdict (null: not a common form). */
  const scan = (line: string): LineVerdict | null => {
    const out: CommonLine = { ipNumber: -1, port: -1, username: "?", password: "?", scheme: null };
    if (!scanCommonLine(line, out)) return null;
    const { ipNumber, port, username, password, scheme } = out;
    return { kind: "proxy", proxy: { ip: `${ipNumber >>> 24}.${(ipNumber >>> 16) & 255}.${(ipNumber >>> 8) & 255}.${ipNumber & 255}`, ipNumber, port, username, password, scheme } };
  };

  it("reads the common forms as the general parser does", () => {
    const common = [
      "1.2.3.4:8080",
      "1.2.3.4:8080\r",
      "001.002.003.004:00080",
      "255.255.255.254:65535",
      "0.0.0.1:1",
      "1.2.3.4:8080:alice:s3cret",
      "1.2.3.4:8080:Al.i_c-e:S3.c_r-t",
      "alice:s3cret@1.2.3.4:8080",
      "1.2.3.4:s3cret@5.6.7.8:90",
      "http://1.2.3.4:80",
      "https://1.2.3.4:443\r",
      "socks4://1.2.3.4:1080",
      "socks5://u:p@1.2.3.4:1080",
      "httpuser:https@1.2.3.4:3128",
      "http://1.2.3.4:80:u:p",
      "socks5://1.2.3.4:1080:Al.i_c-e:S3.c_r-t",
      `1.2.3.4:80:${"u".repeat(255)}:${"p".repeat(255)}`,
    ];
    for (const line of common) expect([line, scan(line)]).toEqual([line, parseProxyLine(line)]);
  });

  it("leaves every other line to the general parser", () => {
    const others = [
      "",
      "  1.2.3.4:8080",
      "1.2.3.4:8080 # note",
      "\uFEFF1.2.3.4:8080",
      "1.2.3.4 8080",
      "HTTP://1.2.3.4:80",
      "socks5h://1.2.3.4:1080",
      "http://1.2.3.4:80/",
      "http://1.2.3.4:80:u:p:q",
      "socks5://1.2.3.4:1080@u:p",
      "1.2.3.4:8080@alice:s3cret",
      "1.2.3.4:8080:alice:pa:ss",
      "1.2.3.4:8080:alice:",
      "1.2.3.4:8080:bob@mail.example:pw",
      ":s3cret@1.2.3.4:8080",
      "alice:@1.2.3.4:8080",
      "1.2.3.4:0",
      "1.2.3.4:65536",
      "1.2.3.4:123456",
      "256.1.1.1:80",
      "1.2.3:80",
      "1.2.3.4.5:80",
      "1234.1.1.1:80",
      "[::1]:80",
      "proxy.example:80",
      `1.2.3.4:80:${"u".repeat(256)}:p`,
      "1.2.3.4:80\r\r",
    ];
    for (const line of others) expect([line, scan(line)]).toEqual([line, null]);
  });

  it("agrees with the general parser on every line it reads, over random lines of proxy-like pieces", () => {
    const pieces = ["1", "2", "25", "255", "256", "0", "00", "7", "65535", "65536", "99999", ".", ".", ".", ":", ":", "@", "u", "Ab", "-", "_", "#", " ", "\t", "\r", "/", "[", "]", "http://", "https://", "socks4://", "socks5://", "Http://", "\u00e9", "\uFEFF", "1.2.3.4", "10.0.0.1:", ":80", "x@"];
    let seed = 12_345;
    const next = (n: number): number => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return (seed >>> 8) % n;
    };
    let read = 0;
    const disagreements: [string, LineVerdict, LineVerdict][] = [];
    for (let k = 0; k < 100_000; k++) {
      let line = "";
      const count = 1 + next(12);
      for (let j = 0; j < count; j++) line += pieces[next(pieces.length)];
      // Every fourth line starts from a common form, so many are read at all.
      if (k % 4 === 0) line = ["1.2.3.4:80", "u:p@1.2.3.4:80", "1.2.3.4:80:u:p", "http://1.2.3.4:80", "socks5://1.2.3.4:80:u:p"][next(5)] + line.slice(0, next(3));
      const found = scan(line);
      if (found === null) continue;
      read++;
      const general = parseProxyLine(line);
      if (JSON.stringify(found) !== JSON.stringify(general)) disagreements.push([line, found, general]);
    }
    expect(disagreements.slice(0, 5)).toEqual([]);
    expect(read).toBeGreaterThan(10_000);
  });
});

function split(chunks: (string | Buffer)[], max?: number): SplitLine[] {
  const splitter = new LineSplitter(max);
  const lines: SplitLine[] = [];
  for (const chunk of chunks) splitter.push(chunk, (line) => lines.push(line));
  splitter.end((line) => lines.push(line));
  return lines;
}

describe("LineSplitter", () => {
  it("splits on LF and keeps CR for the parser, with or without a final newline", () => {
    expect(split(["a\r\nb\n", "c"]).map((l) => l.text)).toEqual(["a\r", "b", "c"]);
    expect(split(["a\n"]).map((l) => l.text)).toEqual(["a"]);
    expect(split(["\n\n"]).map((l) => l.text)).toEqual(["", ""]);
  });

  it("joins lines and multi-byte characters that straddle chunks", () => {
    const bytes = Buffer.from("1.2.3.4:80:üser:pässword\n5.6.7.8:90\n", "utf8");
    const chunks = Array.from(bytes, (byte) => Buffer.from([byte]));
    expect(split(chunks).map((l) => l.text)).toEqual(["1.2.3.4:80:üser:pässword", "5.6.7.8:90"]);
  });

  it("keeps only the cap of a 1 MiB line and flags it", () => {
    const huge = "9".repeat(1024 * 1024);
    const chunks: string[] = [];
    const text = `1.1.1.1:80\n${huge}\n2.2.2.2:80\n`;
    for (let i = 0; i < text.length; i += 65536) chunks.push(text.slice(i, i + 65536));
    const lines = split(chunks, 4096);
    expect(lines.map((l) => [l.text.length, l.overlong])).toEqual([
      [10, false],
      [4096, true],
      [10, false],
    ]);
    expect(lines.map(classifyLine).map((v) => (v.kind === "invalid" ? v.reason : v.kind))).toEqual(["proxy", "invalidFormat", "proxy"]);
  });

  it("does not count an overlong comment or an overlong blank line", () => {
    const lines = split([`#${"c".repeat(10000)}\n${" ".repeat(10000)}\n${" ".repeat(5000)}x\n`], 4096);
    expect(lines.map(classifyLine).map((v) => (v.kind === "invalid" ? v.reason : v.kind))).toEqual(["empty", "empty", "invalidFormat"]);
  });

  it("reads a proxy whose trailing comment runs past the cap, and no line whose comment starts beyond it", () => {
    const comment = "c".repeat(10000);
    const lines = split(
      [
        `45.1.2.3:8080 # ${comment}\n`,
        `\uFEFFsocks5://u:p@45.1.2.4:1080\t#${comment}\r\n`,
        `45.1.2.5:8080 :bogus # ${comment}\n`,
        `45.1.2.6:8080${"x".repeat(5000)} # ${comment}\n`,
      ],
      4096,
    );
    expect(lines.map((l) => l.overlong)).toEqual([true, true, true, true]);
    const verdicts = lines.map(classifyLine);
    expect(verdicts.map((v) => (v.kind === "invalid" ? v.reason : v.kind))).toEqual(["proxy", "proxy", "invalidFormat", "invalidFormat"]);
    expect(verdicts[0]).toEqual(parseProxyLine("45.1.2.3:8080"));
    expect(verdicts[1]).toEqual(parseProxyLine("socks5://u:p@45.1.2.4:1080"));
  });

  it("classifies every one of 400k lines pushed in 64 KiB chunks (lines straddling every chunk boundary)", () => {
    const body = Buffer.from(Array.from({ length: 400_000 }, (_, i) => `${(i >>> 16) + 1}.${(i >>> 8) & 255}.${i & 255}.1:${1000 + (i % 60000)}`).join("\n"));
    const splitter = new LineSplitter();
    let proxies = 0;
    for (let i = 0; i < body.length; i += 65536) {
      splitter.push(body.subarray(i, i + 65536), (line) => {
        if (classifyLine(line).kind === "proxy") proxies++;
      });
    }
    splitter.end((line) => {
      if (classifyLine(line).kind === "proxy") proxies++;
    });
    expect(proxies).toBe(400_000);
  });
});

describe("parseIpv4", () => {
  it("reads dotted quads as unsigned numbers and refuses everything else", () => {
    expect(parseIpv4("0.0.0.0")).toBe(0);
    expect(parseIpv4("255.255.255.255")).toBe(4294967295);
    expect(parseIpv4("1.2.3.4")).toBe(16909060);
    for (const bad of ["", "1.2.3", "1.2.3.4.", ".1.2.3", "1.2.3.256", "a.b.c.d", "1.2.3.4 ", "1111.2.3.4"]) expect(parseIpv4(bad)).toBe(-1);
  });
});
