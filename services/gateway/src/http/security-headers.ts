import type { IncomingMessage, ServerResponse } from "node:http";
import helmet, { type HelmetOptions } from "helmet";

/** The gateway's helmet settings: one place for the Express pipeline and the fast path. */
export const HELMET_OPTIONS: Readonly<HelmetOptions> = { contentSecurityPolicy: { directives: { defaultSrc: ["'self'"] } } };

/**
 * The headers helmet sets with HELMET_OPTIONS, recorded once by running the
 * middleware itself against a recording response (they do not depend on the
 * request), so a hand-written response path sends exactly what the Express
 * pipeline sends.
 */
export function recordSecurityHeaders(): ReadonlyArray<readonly [string, string]> {
  const headers = new Map<string, string>();
  const recorder = {
    setHeader(name: string, value: string | number | readonly string[]) {
      headers.set(name, Array.isArray(value) ? value.join(", ") : String(value));
      return recorder;
    },
    removeHeader(name: string) {
      headers.delete(name);
    },
    getHeader(name: string) {
      return headers.get(name);
    },
  };
  let error: unknown;
  helmet(HELMET_OPTIONS)({} as IncomingMessage, recorder as unknown as ServerResponse, (e?: unknown) => {
    error = e;
  });
  if (error !== undefined) throw new Error("helmet failed while recording its headers", { cause: error });
  return [...headers];
}
