/** An error with a status and a client-safe message; anything else becomes a 500. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Extra fields merged into the `{error}` body (e.g. `blocked_websites`). */
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "HttpError";
  }
}

export const badRequest = (message: string, extra?: Record<string, unknown>) => new HttpError(400, message, extra);
export const unauthorized = (message = "Unauthorized") => new HttpError(401, message);
export const forbidden = (message = "Forbidden") => new HttpError(403, message);
export const notFound = (message = "Not found") => new HttpError(404, message);
export const conflict = (message: string) => new HttpError(409, message);
/** 503; with `retryAfterSeconds` for a passing condition (Retry-After), without it for one a retry cannot fix. */
export const unavailable = (message: string, retryAfterSeconds?: number) =>
  new HttpError(503, message, {}, retryAfterSeconds === undefined ? {} : { "Retry-After": String(retryAfterSeconds) });
