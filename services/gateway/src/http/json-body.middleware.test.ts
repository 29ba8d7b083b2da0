import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import express from "express";
import request from "supertest";
import { createLogger } from "@roost/observability";
import { errorHandler } from "./error-handler.js";
import { jsonBodyParser } from "./json-body.middleware.js";

function echoApp(): express.Express {
  const app = express();
  app.use(jsonBodyParser(64 * 1024));
  app.post("/echo", (req, res) => {
    res.json({ body: req.body as unknown });
  });
  app.use(errorHandler(createLogger({ silent: true })));
  return app;
}

describe("jsonBodyParser", () => {
  const http = request(echoApp());
  const post = (body: string | Buffer, headers: Record<string, string> = {}) =>
    http
      .post("/echo")
      .set({ "Content-Type": "application/json", ...headers })
      // Bytes as given: superagent would send a Buffer typed as JSON through JSON.stringify.
      .serialize((bytes: string | Buffer) => bytes as string)
      .send(body);

  it("refuses a compressed body with 415 {error}, whatever the encoding", async () => {
    const json = JSON.stringify({ email: "a@example.com" });
    const encoded: [string, Buffer][] = [
      ["gzip", gzipSync(json)],
      ["br", brotliCompressSync(json)],
      ["deflate", deflateSync(json)],
      ["GZIP", gzipSync(json)],
      ["x-unknown", Buffer.from(json)],
    ];
    for (const [encoding, body] of encoded) {
      const res = await post(body, { "Content-Encoding": encoding });
      expect([encoding, res.status, res.body]).toEqual([
        encoding,
        415,
        { error: "Compressed request bodies are not accepted: send the body without Content-Encoding" },
      ]);
    }
    // identity is no compression.
    expect((await post(json, { "Content-Encoding": "identity" })).body).toEqual({ body: { email: "a@example.com" } });
  });

  it("refuses a \\u0000 escape with the NUL 400 and keeps an escaped backslash before u0000", async () => {
    const nul = await post(String.raw`{"email":"a@example.com\u0000"}`);
    expect([nul.status, nul.body]).toEqual([400, { error: "Request contains a NUL character (U+0000)" }]);
    const key = await post(String.raw`{"a\u0000":1}`);
    expect([key.status, key.body]).toEqual([400, { error: "Request contains a NUL character (U+0000)" }]);

    const text = await post(String.raw`{"note":"C:\\u0000"}`);
    expect([text.status, text.body]).toEqual([200, { body: { note: "C:\\u0000" } }]);
  });

  it("refuses a raw NUL byte as malformed JSON and JSON that is not UTF-8 with 415", async () => {
    const raw = await post(Buffer.from('{"email":"a\u0000b"}', "utf8"));
    expect([raw.status, raw.body]).toEqual([400, { error: "Malformed JSON body" }]);
    // UTF-16 would hide the escape from a byte scan.
    const utf16 = await post(Buffer.from(String.raw`{"a":"\u0000"}`, "utf16le"), { "Content-Type": "application/json; charset=utf-16le" });
    expect([utf16.status, utf16.body]).toEqual([415, { error: "Unsupported charset: send JSON as UTF-8" }]);
    const utf8 = await post(JSON.stringify({ a: "ü" }), { "Content-Type": "application/json; charset=UTF-8" });
    expect([utf8.status, utf8.body]).toEqual([200, { body: { a: "ü" } }]);
  });
});
