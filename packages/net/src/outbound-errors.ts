import type { ReservedKind } from "./reserved-ranges.js";

/** Every error the guard, the guarded clients and the dialers throw carries one of these codes. */
export type OutboundErrorCode =
  | "OUTBOUND_BLOCKED"
  | "OUTBOUND_UNRESOLVED"
  | "DEADLINE_EXCEEDED"
  | "RESPONSE_TOO_LARGE"
  | "TOO_MANY_REDIRECTS"
  | "BAD_REDIRECT"
  | "PROXY_AUTH_FAILED"
  | "PROXY_REFUSED"
  | "PROXY_PROTOCOL"
  | "PROXY_UNREACHABLE";

export abstract class OutboundError extends Error {
  abstract readonly code: OutboundErrorCode;
}

/** The guard refused a destination before any socket was opened for it. */
export class OutboundBlockedError extends OutboundError {
  override readonly name = "OutboundBlockedError";
  readonly code = "OUTBOUND_BLOCKED";
  constructor(
    /** The host as given (a name or a literal in any form). */
    readonly host: string,
    /** The checked address that was refused (canonical form). */
    readonly address: string,
    readonly reason: ReservedKind,
  ) {
    super(`outbound connection to ${host} refused: ${address} is ${reason}`);
  }
}

/** The name did not resolve to any address. */
export class OutboundUnresolvedError extends OutboundError {
  override readonly name = "OutboundUnresolvedError";
  readonly code = "OUTBOUND_UNRESOLVED";
  constructor(readonly host: string, options?: { cause?: unknown }) {
    super(`${host} did not resolve`, options);
  }
}

/** The one deadline of an operation passed (connect, handshake and answer together). */
export class DeadlineExceededError extends OutboundError {
  override readonly name = "DeadlineExceededError";
  readonly code = "DEADLINE_EXCEEDED";
  constructor(readonly deadlineMs: number) {
    super(`deadline of ${deadlineMs} ms exceeded`);
  }
}

export class ResponseTooLargeError extends OutboundError {
  override readonly name = "ResponseTooLargeError";
  readonly code = "RESPONSE_TOO_LARGE";
  constructor(readonly maxBytes: number) {
    super(`response body exceeds ${maxBytes} bytes`);
  }
}

export class TooManyRedirectsError extends OutboundError {
  override readonly name = "TooManyRedirectsError";
  readonly code = "TOO_MANY_REDIRECTS";
  constructor(readonly maxRedirects: number) {
    super(`more than ${maxRedirects} redirects`);
  }
}

/** A redirect without a usable Location, or to a scheme other than http(s). */
export class BadRedirectError extends OutboundError {
  override readonly name = "BadRedirectError";
  readonly code = "BAD_REDIRECT";
  constructor(readonly location: string) {
    super(`redirect to an unusable location: ${location}`);
  }
}

/** The proxy answered, but not with a tunnel or a response: auth refused, target refused, garbled protocol. */
export class ProxyError extends OutboundError {
  override readonly name = "ProxyError";
  constructor(
    readonly code: "PROXY_AUTH_FAILED" | "PROXY_REFUSED" | "PROXY_PROTOCOL" | "PROXY_UNREACHABLE",
    message: string,
    /** HTTP status of a refused CONNECT or absolute-form request, when there was one. */
    readonly statusCode?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
