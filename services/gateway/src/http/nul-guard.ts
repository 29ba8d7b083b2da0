import type { RequestHandler } from "express";
import { badRequest } from "./http-error.js";

/** True when a string anywhere in `value` (keys included) holds U+0000. */
export function containsNul(value: unknown, depth = 0): boolean {
  if (typeof value === "string") return value.includes("\u0000");
  if (depth > 64 || value === null || typeof value !== "object") return false;
  if (Array.isArray(value)) return value.some((item) => containsNul(item, depth + 1));
  return Object.entries(value).some(([key, item]) => key.includes("\u0000") || containsNul(item, depth + 1));
}

/**
 * PostgreSQL text cannot hold U+0000: such input would fail deep inside a
 * query as a 500. Refuse it at the edge instead, for the query string, the
 * route parameters and any parsed body.
 */
export const rejectNulBytes: RequestHandler = (req, _res, next) => {
  if (containsNul(req.query) || containsNul(req.params) || containsNul(req.body)) {
    throw badRequest("Request contains a NUL character (U+0000)");
  }
  next();
};
