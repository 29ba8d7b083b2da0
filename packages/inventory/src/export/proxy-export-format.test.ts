import { compileTemplate, csvLine, parseOutputFormat, type ExportRow } from "./proxy-export-format.js";

const row = (overrides: Partial<ExportRow> = {}): ExportRow => ({
  id: 1,
  ip: "1.2.3.4",
  port: 8080,
  username: "alice",
  password: "s3cret",
  protocols: ["http", "socks5"],
  protocol: "socks5",
  country: "US",
  type: "datacenter",
  anonymity: "elite",
  responseTime: 250,
  alive: true,
  latestCheck: "2026-01-01T00:00:00.000Z",
  reputationLabel: "good",
  reputationScore: 87.5,
  ...overrides,
});
const bare = row({ username: "", password: "" });

describe("compileTemplate", () => {
  it("replaces placeholders only as whole words", () => {
    const template = compileTemplate("ip:port ipport zip time timeout country_code reputation_label reputation_score reputation");
    expect(template.render(row())).toBe("1.2.3.4:8080 ipport zip 250 timeout country_code good 87.5 good");
  });

  it("drops username:password@ for proxies without credentials, and keeps it otherwise", () => {
    const url = compileTemplate("protocol://username:password@ip:port");
    expect(url.render(row())).toBe("socks5://alice:s3cret@1.2.3.4:8080");
    expect(url.render(bare)).toBe("socks5://1.2.3.4:8080");
    const bracketed = compileTemplate("username:password@[ip]:port");
    expect(bracketed.render(bare)).toBe("[1.2.3.4]:8080");
  });

  it("drops a :username:password pair for proxies without credentials", () => {
    const colon = compileTemplate("ip:port:username:password");
    expect(colon.render(row())).toBe("1.2.3.4:8080:alice:s3cret");
    expect(colon.render(bare)).toBe("1.2.3.4:8080");
    expect(compileTemplate("ip port username password").render(bare)).toBe("1.2.3.4 8080  ");
  });

  it("splits into literals and whole-word placeholders, with the credential-free form beside (the export's SQL is built from both)", () => {
    const template = compileTemplate("protocol://username:password@ip:port #zip");
    const address = [{ field: "ip" }, { literal: ":" }, { field: "port" }, { literal: " #" }, { literal: "zip" }];
    const credentials = [{ field: "username" }, { literal: ":" }, { field: "password" }, { literal: "@" }];
    expect(template.full).toEqual([{ field: "protocol" }, { literal: "://" }, ...credentials, ...address]);
    expect(template.bare).toEqual([{ field: "protocol" }, { literal: "://" }, ...address]);
  });
});

describe("parseOutputFormat", () => {
  it("reads json, csv, a template or the ip:port default", () => {
    expect(parseOutputFormat("JSON").kind).toBe("json");
    expect(parseOutputFormat(" csv ").kind).toBe("csv");
    const fallback = parseOutputFormat(undefined);
    expect(fallback.kind === "template" && fallback.template.render(row())).toBe("1.2.3.4:8080");
    const empty = parseOutputFormat("");
    expect(empty.kind === "template" && empty.template.render(row())).toBe("1.2.3.4:8080");
    // Whitespace at either end is dropped; only whitespace is the default.
    const padded = parseOutputFormat("  ip port\t");
    expect(padded.kind === "template" && padded.template.render(row())).toBe("1.2.3.4 8080");
    const blank = parseOutputFormat(" \t ");
    expect(blank.kind === "template" && blank.template.render(row())).toBe("1.2.3.4:8080");
  });
});

describe("csvLine", () => {
  it("quotes fields that need it (RFC 4180)", () => {
    expect(csvLine(row({ username: 'a,b', password: 'say "hi"', latestCheck: null, protocols: [] }))).toBe(
      '1,1.2.3.4,8080,"a,b","say ""hi""",,US,datacenter,elite,250,true,,good,87.5',
    );
  });

  it("keeps spreadsheets from running a cell as a formula: a leading ' and quotes", () => {
    const cells = (username: string, password: string) => csvLine(row({ username, password })).split(",").slice(3, 5);
    expect(cells('=HYPERLINK("http://x.example")', "+1")).toEqual(['"\'=HYPERLINK(""http://x.example"")"', '"\'+1"']);
    expect(cells("-2+3", "@SUM(A1)")).toEqual(['"\'-2+3"', '"\'@SUM(A1)"']);
    expect(cells("\tcmd", "\rx")).toEqual(['"\'\tcmd"', '"\'\rx"']);
    // Only the first character counts.
    expect(cells("user=1", "p@ss-word")).toEqual(["user=1", "p@ss-word"]);
  });
});
