import { copyOutStream, written } from "@roost/testkit";
import { ByteWriter } from "@roost/db";
import { CopyExportError, CopyExportWriter, CopyLineWriter, decodeCopyText } from "./proxy-export-copy.js";
import { csvLine, EXPORT_COLUMNS, jsonObject, type ExportRow } from "./proxy-export-format.js";
import { protocolsOfMask } from "../proxy-identity.js";

/** A row as PostgreSQL's column texts (COPY_EXPORT_SELECT order); null is NULL. */
interface Columns {
  id: string;
  ip: string;
  port: string;
  username: string;
  password: string;
  mask: string;
  country: string;
  type: string;
  anonymity: string;
  responseTime: string;
  alive: string;
  /** The timestamp's text in UTC (ISO DateStyle), or to_char's ISO 8601 for years past 9999. */
  latestCheck: string | null;
  label: string;
  score: string;
}

/** PostgreSQL's COPY TO text escaping (CopyAttributeOutText): backslash and six control characters. */
const ESCAPES: Record<string, string> = { "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v" };
const copyField = (value: string | null): string => (value === null ? "\\N" : value.replace(/[\\\b\f\n\r\t\v]/g, (c) => ESCAPES[c] ?? c));
const copyLine = (c: Columns): string =>
  `${[c.id, c.ip, c.port, c.username, c.password, c.mask, c.country, c.type, c.anonymity, c.responseTime, c.alive, c.latestCheck, c.label, c.score].map(copyField).join("\t")}\n`;

/** The ISO 8601 form of a timestamp's text, as the driver's Date gives it (milliseconds truncated); to_char's text as it is. */
const isoOf = (text: string): string => {
  const parts = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?$/.exec(text);
  return parts ? `${parts[1]}T${parts[2]}.${(parts[3] ?? "").padEnd(3, "0").slice(0, 3)}Z` : text;
};

/** What the driver made of the same texts before (pg's int, bool and float parsers), as the format functions take it. */
const exportRow = (c: Columns): ExportRow => ({
  id: Number.parseInt(c.id, 10),
  ip: c.ip,
  port: Number.parseInt(c.port, 10),
  username: c.username,
  password: c.password,
  protocols: protocolsOfMask(Number(c.mask) & 15),
  protocol: "http",
  country: c.country,
  type: c.type,
  anonymity: c.anonymity,
  responseTime: Number.parseInt(c.responseTime, 10),
  alive: c.alive === "t",
  latestCheck: c.latestCheck === null ? null : isoOf(c.latestCheck),
  reputationLabel: c.label,
  reputationScore: Number.parseFloat(c.score),
});

const expected = (format: "csv" | "json", rows: readonly Columns[]): string => {
  if (format === "csv") return `${EXPORT_COLUMNS.join(",")}\n${rows.map((r) => `${csvLine(exportRow(r))}\n`).join("")}`;
  if (rows.length === 0) return "[]\n";
  return `[${rows.map((r, i) => `${i === 0 ? "\n" : ",\n"}${jsonObject(exportRow(r))}`).join("")}\n]\n`;
};

const run = (format: "csv" | "json", bytes: Buffer, cuts: readonly number[]): string => written(new CopyExportWriter(format), bytes, cuts).text;

const plain: Columns = {
  id: "7",
  ip: "45.1.2.3",
  port: "8080",
  username: "alice",
  password: "s3cret",
  mask: "9",
  country: "US",
  type: "datacenter",
  anonymity: "elite",
  responseTime: "120",
  alive: "t",
  latestCheck: "2026-11-22 06:36:35.733",
  label: "good",
  score: "76.1",
};
const neverChecked: Columns = { ...plain, id: "8", username: "", password: "", mask: "0", anonymity: "N/A", responseTime: "0", alive: "f", latestCheck: null, label: "unknown", score: "0" };
const tricky: Columns[] = [
  { ...plain, id: "9", username: 'q"b\\s\u0001t\tn\nu\u00e9\u2028\ud83d\ude00/<>', password: "x,y\"z" },
  { ...plain, id: "10", username: "=HYPERLINK(1)", password: "+1" },
  { ...plain, id: "11", username: "-2", password: "@sum" },
  { ...plain, id: "12", username: "\tlead", password: "\rcr" },
  { ...plain, id: "13", username: " padded", password: "padded " },
  { ...plain, id: "14", username: "\\N", password: "back\\slash\b\f\v" },
  { ...plain, id: "15", username: "\u007f~", password: "\u00a0nbsp", country: "N/A", mask: "15" },
  { ...plain, id: "2147483647", port: "65535", responseTime: "60000", score: "-0" },
  { ...plain, id: "16", score: "1e-05" },
  { ...plain, id: "17", score: "1.2345678e+07" },
  { ...plain, id: "18", score: "NaN" },
  { ...plain, id: "19", score: "Infinity" },
  { ...plain, id: "20", score: "-Infinity" },
  { ...plain, id: "21", score: "0.1" },
  { ...plain, id: "22", score: "-12.5" },
  { ...plain, id: "23", latestCheck: "2026-11-22 06:36:35" },
  { ...plain, id: "24", latestCheck: "2026-11-22 06:36:35.7" },
  { ...plain, id: "25", latestCheck: "0001-01-01 00:00:00.123456" },
  { ...plain, id: "26", latestCheck: "9999-12-31 23:59:59.999999" },
  { ...plain, id: "27", latestCheck: "12026-01-01T00:00:00.000Z" },
];

describe("CopyExportWriter (csv and json from COPY text)", () => {
  for (const format of ["csv", "json"] as const) {
    it(`${format}: writes every row byte for byte as ${format === "csv" ? "csvLine" : "jsonObject"} would`, () => {
      const rows = [plain, neverChecked, ...tricky];
      const bytes = Buffer.from(rows.map(copyLine).join(""), "utf8");
      expect(run(format, bytes, [])).toBe(expected(format, rows));
    });

    it(`${format}: gives the same bytes however the COPY's messages are cut into reads`, () => {
      const rows = [plain, tricky[0] ?? plain, neverChecked];
      const bytes = Buffer.from(rows.map(copyLine).join(""), "utf8");
      const want = expected(format, rows);
      const length = copyOutStream(bytes).length;
      for (let cut = 0; cut <= length; cut++) expect([cut, run(format, bytes, [cut])]).toEqual([cut, want]);
      expect(run(format, bytes, Array.from({ length }, (_, i) => i))).toBe(want);
    });

    it(`${format}: grows its buffer for a field that expands many times over, mid-row`, () => {
      // A control character is one byte in COPY text and six in JSON (\u0001): the buffer sized
      // for the read runs out inside the field, and the rest of the row must land after it.
      const rows = [{ ...plain, username: "\u0001".repeat(20_000), password: "after" }, plain];
      const bytes = Buffer.from(rows.map(copyLine).join(""), "utf8");
      expect(run(format, bytes, [])).toBe(expected(format, rows));
    });

    it(`${format}: writes an empty export`, () => {
      expect(run(format, Buffer.alloc(0), [])).toBe(expected(format, []));
    });

    it(`${format}: counts rows`, () => {
      const writer = new CopyExportWriter(format);
      const rows = [plain, neverChecked, plain];
      written(writer, Buffer.from(rows.map(copyLine).join(""), "utf8"), []);
      expect(writer.rows).toBe(3);
    });
  }

  it("stops at a timestamp in another DateStyle rather than write wrong bytes", () => {
    for (const latestCheck of ["24.11.2026 01:02:03.5", "11/24/2026 01:02:03", "Tue Nov 24 01:02:03 2026", "2026-11-24 01:02:03.", "2026-11-24 01:02:03.1234567"]) {
      const line = Buffer.from(copyLine({ ...plain, latestCheck }).slice(0, -1));
      for (const format of ["csv", "json"] as const) {
        expect(() => new CopyExportWriter(format).row(new ByteWriter(64), line, 0, line.length)).toThrow(CopyExportError);
      }
    }
  });

  it("refuses rows with another number of fields", () => {
    const line = Buffer.from(copyLine(plain).slice(0, -1));
    const fewer = Buffer.from(copyLine(plain).replace("\t", "").slice(0, -1));
    const more = Buffer.from(copyLine(plain).replace("\n", "\tx"));
    for (const format of ["csv", "json"] as const) {
      expect(() => new CopyExportWriter(format).row(new ByteWriter(64), fewer, 0, fewer.length)).toThrow(CopyExportError);
      expect(() => new CopyExportWriter(format).row(new ByteWriter(64), more, 0, more.length)).toThrow(CopyExportError);
      expect(() => new CopyExportWriter(format).row(new ByteWriter(64), line, 0, line.length)).not.toThrow();
    }
  });
});

describe("decodeCopyText", () => {
  it("undoes COPY's escapes and reads UTF-8", () => {
    const value = "a\\b\tc\nd\re\bf\fg\vh\u00e9\ud83d\ude00";
    const bytes = Buffer.from(`x\t${copyField(value)}\ty`);
    const from = 2;
    const to = bytes.length - 2;
    expect(decodeCopyText(bytes, from, to)).toBe(value);
    expect(decodeCopyText(Buffer.from("plain"), 0, 5)).toBe("plain");
  });
});

describe("CopyLineWriter (line templates: each COPY row is the whole line)", () => {
  /** The writer's output for the lines' COPY text, its messages cut at `cuts`, and the rows it counted. */
  const lines = (values: readonly string[], cuts: readonly number[]): { text: string; rows: number } => {
    const writer = new CopyLineWriter();
    const { text } = written(writer, copyText(values), cuts);
    return { text, rows: writer.rows };
  };
  const copyText = (values: readonly string[]): Buffer => Buffer.from(values.map((v) => `${copyField(v)}\n`).join(""), "utf8");
  const values = ["1.2.3.4:80", 'a\\b\tc\nd\re\bf\fg\vh\u00e9\ud83d\ude00 "q"', "\\", "", "end\\"];
  const want = values.map((v) => `${v}\n`).join("");

  it("gives the lines with COPY's escapes undone, and counts one row per line", () => {
    expect(lines(values, [])).toEqual({ text: want, rows: values.length });
  });

  it("gives the same bytes however the COPY's messages are cut into reads", () => {
    const length = copyOutStream(copyText(values)).length;
    for (let cut = 0; cut <= length; cut++) expect([cut, lines(values, [cut])]).toEqual([cut, { text: want, rows: values.length }]);
    expect(lines(values, Array.from({ length }, (_, i) => i))).toEqual({ text: want, rows: values.length });
  });
});
