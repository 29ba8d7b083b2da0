import { copyOutResponse, copyOutStream, copyTail, message, RecordingWriter, written } from "@roost/testkit";
import { CopyOutError, CopyOutParser } from "./copy-out.js";

describe("CopyOutParser (COPY TO's messages, as the socket gives them)", () => {
  const text = Buffer.from("1.2.3.4:80\n\nz\u00e9\\t\n5.6.7.8:3128\n", "utf8");
  const rows = ["1.2.3.4:80", "", "z\u00e9\\t", "5.6.7.8:3128"];

  it("hands each CopyData's row to the writer without its newline, and the bytes after CopyDone back", () => {
    const writer = new RecordingWriter();
    const { text: out, rest } = written(writer, text, []);
    expect(writer.seen).toEqual(rows);
    expect(out).toBe(rows.join(""));
    expect(rest).toEqual(copyTail(rows.length));
  });

  it("gives the same rows however the messages are cut, headers included", () => {
    const length = copyOutStream(text).length;
    for (let cut = 0; cut <= length; cut++) {
      const writer = new RecordingWriter();
      const { rest } = written(writer, text, [cut]);
      expect([cut, writer.seen, rest]).toEqual([cut, rows, copyTail(rows.length)]);
    }
    for (let step = 1; step <= 7; step++) {
      const writer = new RecordingWriter();
      const cuts = Array.from({ length: Math.floor(length / step) }, (_, i) => (i + 1) * step);
      const { rest } = written(writer, text, cuts);
      expect([step, writer.seen, rest]).toEqual([step, rows, copyTail(rows.length)]);
    }
  });

  it("skips notices, parameter changes and notifications between rows", () => {
    const stream = Buffer.concat([
      copyOutResponse(1),
      message("d", "a\n"),
      message("N", "SNOTICE\0Mhello\0\0"),
      message("S", "TimeZone\0UTC\0"),
      message("A", Buffer.from("\0\0\0\x01chan\0payload\0")),
      message("d", "b\n"),
      message("c"),
      copyTail(2),
    ]);
    for (let cut = 0; cut <= stream.length; cut++) {
      const writer = new RecordingWriter();
      const parser = new CopyOutParser(writer);
      const first = parser.feed(stream.subarray(0, cut));
      const second = first.rest === null ? parser.feed(stream.subarray(cut)) : { rest: Buffer.concat([first.rest, stream.subarray(cut)]) };
      expect([cut, writer.seen, second.rest]).toEqual([cut, ["a", "b"], copyTail(2)]);
    }
  });

  it("stops at a message that ends the COPY (an error) and hands it back unread", () => {
    const error = message("E", "SERROR\0C22012\0Mdivision by zero\0\0");
    const stream = Buffer.concat([copyOutResponse(1), message("d", "a\n"), error, message("Z", "I")]);
    const writer = new RecordingWriter();
    const fed = new CopyOutParser(writer).feed(stream);
    expect(writer.seen).toEqual(["a"]);
    expect(fed.rest).toEqual(Buffer.concat([error, message("Z", "I")]));
  });

  it("refuses a malformed length, and reading after the end", () => {
    const bad = Buffer.from([0x64, 0, 0, 0, 2, 0x61]);
    expect(() => new CopyOutParser(new RecordingWriter()).feed(bad)).toThrow(CopyOutError);
    const parser = new CopyOutParser(new RecordingWriter());
    parser.feed(Buffer.concat([copyOutResponse(1), message("c"), copyTail(0)]));
    expect(() => parser.feed(Buffer.from("x"))).toThrow(CopyOutError);
  });
});
