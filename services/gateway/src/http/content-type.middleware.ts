import type { RequestHandler } from "express";
import { badRequest } from "./http-error.js";

/**
 * The routes the contract gives a multipart body (uploads). Lower case and
 * without a trailing slash, as Express routes them (case-insensitive, not
 * strict), relative to `/api`.
 */
const MULTIPART_PATHS: ReadonlySet<string> = new Set(["/addproxies", "/scrapingsources"]);

/**
 * A request that carries a body must say it is JSON, or multipart on an
 * upload route. Without this, `curl -d '{...}'` (sent as form data) reached
 * the validators as an empty body and got a puzzling "expected object" 400,
 * and a multipart export request, whose body no parser reads, ran as an
 * export without filters.
 */
export const requireJsonOrMultipart: RequestHandler = (req, _res, next) => {
  const length = Number(req.get("Content-Length") ?? "0");
  const hasBody = req.get("Transfer-Encoding") !== undefined || (Number.isFinite(length) && length > 0);
  if (!hasBody || req.is(["application/json", "application/*+json"])) {
    next();
    return;
  }
  if (req.is("multipart/form-data") && MULTIPART_PATHS.has(req.path.toLowerCase().replace(/\/+$/, ""))) {
    next();
    return;
  }
  req.resume();
  // 400, the contract's status for a payload it cannot use (no 415 in its table).
  throw badRequest("Send the body as JSON with Content-Type: application/json (uploads: multipart/form-data)");
};
