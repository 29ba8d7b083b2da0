import type { ErrorRequestHandler, RequestHandler } from "express";
import type { Logger } from "@roost/observability";
import { RevocationUnavailableError } from "@roost/auth";
import { databaseUnavailable, isDatabaseUnavailable } from "@roost/db";
import { CallerGone } from "../db-limiter.js";
import { HttpError } from "./http-error.js";
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

/**
 * The single place errors become responses: every error body is JSON
 * `{error}`; body-parser errors keep their 4xx; unexpected ones are logged
 * and answered 500 without details.
 */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, next) => {
    if (res.headersSent) {
      next(error);
      return;
    }
    // A statement skipped because the client had gone: nobody to answer, nothing went wrong.
    if (error instanceof CallerGone) return;
    if (error instanceof HttpError) {
      for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
      res.status(error.status).json({ error: error.message, ...error.extra });
      return;
    }
    if (error instanceof RevocationUnavailableError) {
      res.setHeader("Retry-After", "1");
      res.status(503).json({ error: "Authentication temporarily unavailable" });
      return;
    }
    if (isDatabaseUnavailable(error)) {
      logger.warn("database unavailable, request answered 503", { error, method: req.method, route: req.route?.path });
      res.setHeader("Retry-After", String(databaseUnavailable.retryAfterSeconds));
      res.status(databaseUnavailable.status).json({ error: databaseUnavailable.message });
      return;
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
      res.status(status).json({ error: message });
      return;
    }
    logger.error("unhandled request error", {
      error,
      method: req.method,
      route: req.route?.path,
      requestId: res.getHeader("X-Request-ID"),
    });
    res.status(500).json({ error: "Internal server error" });
  };
}
