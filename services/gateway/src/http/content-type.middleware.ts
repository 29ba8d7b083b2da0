import type { RequestHandler } from "express";
import { badRequest } from "./http-error.js";

/**
 * A request that carries a body must say it is JSON (or multipart, for the
 * upload routes). Without this, `curl -d '{...}'` (sent as form data) reached
 * the validators as an empty body and got a puzzling "expected object" 400.
 */
export const requireJsonOrMultipart: RequestHandler = (req, _res, next) => {
  const length = Number(req.get("Content-Length") ?? "0");
  const hasBody = req.get("Transfer-Encoding") !== undefined || (Number.isFinite(length) && length > 0);
  if (!hasBody || req.is(["application/json", "application/*+json", "multipart/form-data"])) {
    next();
    return;
  }
  req.resume();
  // 400, the contract's status for a payload it cannot use (no 415 in its table).
  throw badRequest("Send the body as JSON with Content-Type: application/json (uploads: multipart/form-data)");
};
