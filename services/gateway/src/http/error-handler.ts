import type { ErrorRequestHandler, RequestHandler } from "express";
import type { Logger } from "@roost/observability";
import { RevocationUnavailableError } from "@roost/auth";
import { databaseUnavailable, isDatabaseUnavailable } from "@roost/db";
import { CallerGone } from "../db-limits/statement-limiter.js";
import { HttpError } from "./http-error.js";
import { isRedisUnavailable, redisUnavailable } from "./redis-unavailable.js";
import { CHARSET_MESSAGE } from "./json-body.middleware.js";

/** Unknown routes: JSON 404. */
export const notFoundHandler: RequestHandler = (_req, res) => {
  res.status(404).json({ error: "Not found" });
};

interface BodyParserError {
  type?: string;
  status?: number;
  statusCode?: number;
  expose?: boolean;
}

/** What an error is answered: status, JSON body and extra headers. */
export interface ErrorResponse {
  status: number;
  body: { error: string } & Record<string, unknown>;
  headers: Record<string, string>;
}

/**
 * The single place errors become responses (the Express error handler and
 * the list page's fast path): every error body is JSON `{error}`;
 * body-parser errors keep their 4xx; unexpected ones are logged and answered
 * 500 without details. Null: nobody to answer (the client had gone).
 */
export function errorResponse(error: unknown, logger: Logger, where: { method?: string; route?: string; requestId?: unknown }): ErrorResponse | null {
  if (error instanceof CallerGone) return null;
  if (error instanceof HttpError) return { status: error.status, body: { error: error.message, ...error.extra }, headers: error.headers };
  if (error instanceof RevocationUnavailableError) return { status: 503, body: { error: "Authentication temporarily unavailable" }, headers: { "Retry-After": "1" } };
  if (isRedisUnavailable(error)) {
    logger.warn("redis unavailable, request answered 503", { error, ...where });
    return { status: redisUnavailable.status, body: { error: redisUnavailable.message }, headers: { "Retry-After": String(redisUnavailable.retryAfterSeconds) } };
  }
  if (isDatabaseUnavailable(error)) {
    logger.warn("database unavailable, request answered 503", { error, ...where });
    return { status: databaseUnavailable.status, body: { error: databaseUnavailable.message }, headers: { "Retry-After": String(databaseUnavailable.retryAfterSeconds) } };
  }
  const parserError = error as BodyParserError;
  const status = parserError.status ?? parserError.statusCode;
  if (typeof status === "number" && status >= 400 && status < 500) {
    const message =
      parserError.type === "entity.too.large"
        ? "Request body too large"
        : parserError.type === "entity.parse.failed"
          ? "Malformed JSON body"
          : parserError.type === "encoding.unsupported"
            ? "Compressed request bodies are not accepted: send the body without Content-Encoding"
            : parserError.type === "charset.unsupported"
              ? CHARSET_MESSAGE
              : "Bad request";
    return { status, body: { error: message }, headers: {} };
  }
  logger.error("unhandled request error", { error, ...where });
  return { status: 500, body: { error: "Internal server error" }, headers: {} };
}

/** Express's error handler: `errorResponse` written with res.json. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, next) => {
    if (res.headersSent) {
      next(error);
      return;
    }
    const response = errorResponse(error, logger, { method: req.method, route: req.route?.path, requestId: res.getHeader("X-Request-ID") });
    if (!response) return;
    for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
    res.status(response.status).json(response.body);
  };
}
