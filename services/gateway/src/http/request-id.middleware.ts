import { randomUUID } from "node:crypto";
import type { RequestHandler } from "express";

const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Keeps a caller's X-Request-ID when it is sane, else makes one; echoed on the response. */
export const requestId: RequestHandler = (req, res, next) => {
  const incoming = req.get("X-Request-ID");
  const id = incoming && SAFE_ID.test(incoming) ? incoming : randomUUID();
  res.setHeader("X-Request-ID", id);
  next();
};
