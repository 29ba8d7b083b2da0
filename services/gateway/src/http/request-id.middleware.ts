import { randomUUID } from "node:crypto";
import type { RequestHandler } from "express";

const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The caller's X-Request-ID when it is sane, else a new one. */
export function chooseRequestId(incoming: string | undefined): string {
  return incoming && SAFE_ID.test(incoming) ? incoming : randomUUID();
}

/** Keeps a caller's X-Request-ID when it is sane, else makes one; echoed on the response. */
export const requestId: RequestHandler = (req, res, next) => {
  res.setHeader("X-Request-ID", chooseRequestId(req.get("X-Request-ID")));
  next();
};
