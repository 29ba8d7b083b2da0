import { containsNul, hasNulEscape } from "./nul-guard.js";

const scan = (jsonText: string) => hasNulEscape(Buffer.from(jsonText, "utf8"));

describe("hasNulEscape", () => {
  it("finds a \\u0000 escape wherever JSON.parse would turn it into U+0000", () => {
    const texts = [
      String.raw`"\u0000"`,
      String.raw`{"email":"x@example.com\u0000"}`,
      String.raw`{"k\u0000ey":1}`,
      String.raw`["a","b\u0000c"]`,
      String.raw`["\\\u0000"]`, // an escaped backslash, then the escape
      String.raw`["\"\u0000"]`,
      String.raw`["ü€😀\u0000"]`, // after multi-byte UTF-8
      String.raw`[1,2,"\u0000"]`, // the last six bytes
    ];
    for (const text of texts) {
      expect([text, containsNul(JSON.parse(text)), scan(text)]).toEqual([text, true, true]);
    }
  });

  it("passes text that only looks like one", () => {
    const texts = [
      String.raw`["\\u0000"]`, // a backslash, then the text u0000
      String.raw`["\\\\u0000"]`,
      String.raw`["\u0001","u0000"]`,
      String.raw`["\u1000","\u0100","\u0010","u0000","\\"]`,
      String.raw`{"a":"\\","b":"u0000"}`,
      String.raw`{"a":"\/u0000"}`,
      "",
      "{}",
      String.raw`"\u000"`,
    ];
    for (const text of texts) {
      let parsedHasNul: boolean | "invalid" = "invalid";
      try {
        parsedHasNul = containsNul(JSON.parse(text));
      } catch {
        // Texts JSON.parse refuses are a 400 "Malformed JSON body" anyway.
      }
      expect([text, parsedHasNul === true, scan(text)]).toEqual([text, false, false]);
    }
  });

  it("agrees with JSON.parse on runs of backslashes before u0000", () => {
    for (let backslashes = 1; backslashes <= 9; backslashes += 1) {
      const text = `["${"\\".repeat(backslashes)}u0000"]`;
      // An even run is half as many backslashes then text; an odd run ends in the escape.
      expect([backslashes, containsNul(JSON.parse(text))]).toEqual([backslashes, backslashes % 2 === 1]);
      expect([backslashes, scan(text)]).toEqual([backslashes, backslashes % 2 === 1]);
    }
  });
});
