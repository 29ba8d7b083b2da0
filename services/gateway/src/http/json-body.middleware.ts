import express, { type RequestHandler } from "express";
import { badRequest, HttpError } from "./http-error.js";
import { hasNulEscape, NUL_MESSAGE } from "./nul-guard.js";

/** The 415 message for a JSON body in a charset other than UTF-8 (also body-parser's own charset refusal). */
export const CHARSET_MESSAGE = "Unsupported charset: send JSON as UTF-8";

/**
 * The API's JSON body parser: at most `maxBodyBytes` (413 past it), an object
 * or array at the top, UTF-8 only, never compressed, never holding U+0000.
 *
 * - `inflate: false`: a body with a `Content-Encoding` other than `identity`
 *   is refused unread with 415 (`encoding.unsupported`, worded by the error
 *   handler). Inflating let a 25-byte brotli body cost as much parsing as
 *   1 MiB of JSON, from a client that had not authenticated; no Roost client
 *   compresses request bodies.
 * - `verify` runs on the raw bytes before `JSON.parse`: a `\u0000` escape is a
 *   400 with NUL_MESSAGE, as in a query string, for one pass over the bytes
 *   instead of a walk of the parsed value. That scan is exact for UTF-8 only,
 *   so the other `utf-*` charsets body-parser would accept (UTF-16, UTF-32,
 *   UTF-7) are a 415; RFC 8259 asks for UTF-8 anyway.
 */
export function jsonBodyParser(maxBodyBytes: number): RequestHandler {
  return express.json({
    limit: maxBodyBytes,
    strict: true,
    inflate: false,
    verify: (_req, _res, body, charset) => {
      if (charset !== "utf-8") throw new HttpError(415, CHARSET_MESSAGE);
      if (hasNulEscape(body)) throw badRequest(NUL_MESSAGE);
    },
  });
}
