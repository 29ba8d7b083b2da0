import type { IncomingMessage, ServerResponse } from "node:http";
import type pg from "pg";
import type { Metrics } from "@roost/observability";
import type { ProxyDb } from "@roost/inventory";
import { HttpError } from "../http/http-error.js";
import { CallerGone, createLimiter, LimiterWaitTimeout } from "./statement-limiter.js";

/**
 * The list pages' share of the database: at most API_PAGE_QUERY_CONCURRENCY
 * page statements at once per process, the rest wait in line (users take
 * turns) for at most API_PAGE_QUERY_WAIT_MS.
 */
export interface PageStatements {
  /**
   * The pool as one request of `userId` reads its page (`query()` only). A
   * statement whose turn comes after its client has gone is not run; one
   * that waited past the deadline fails with a 503.
   */
  forRequest(req: IncomingMessage, res: ServerResponse, userId: number): ProxyDb;
}

export interface PageStatementsOptions {
  concurrency: number;
  maxWaitMs: number;
}

/** What a page request that waited too long is answered: a 503 the client may retry in a second. */
export const pagesBusy = () =>
  new HttpError(503, "Too many list pages are being read at once; try again shortly", {}, { "Retry-After": "1" });

export function createPageStatements(pool: pg.Pool, { concurrency, maxWaitMs }: PageStatementsOptions, metrics: Metrics): PageStatements {
  const gauge = metrics.gauge("svc_page_statements", "List-page statements running, and waiting for API_PAGE_QUERY_CONCURRENCY, in this process", ["state"]);
  const dropped = metrics.counter("svc_page_statements_dropped_total", "List-page statements not run: their wait passed API_PAGE_QUERY_WAIT_MS, or their client had gone", ["reason"]);
  // The series looked up once: the limiter reports on every page request, and a set by label object hashes the labels each time.
  const runningSeries = gauge.labels({ state: "running" });
  const waitingSeries = gauge.labels({ state: "waiting" });
  const timedOutSeries = dropped.labels({ reason: "wait_timeout" });
  const goneSeries = dropped.labels({ reason: "client_gone" });
  const limiter = createLimiter(concurrency, {
    maxWaitMs,
    observe: ({ running, waiting }) => {
      runningSeries.set(running);
      waitingSeries.set(waiting);
    },
  });
  const timedOut = new WeakSet<IncomingMessage>();
  return {
    forRequest(req, res, userId) {
      const options = { abandoned: () => res.destroyed, key: userId };
      const query = (...args: unknown[]): Promise<unknown> => {
        if (timedOut.has(req)) return Promise.reject(pagesBusy());
        return limiter.run(() => Reflect.apply(pool.query, pool, args) as Promise<unknown>, options).catch((error: unknown) => {
          if (error instanceof LimiterWaitTimeout) {
            timedOut.add(req);
            timedOutSeries.inc();
            throw pagesBusy();
          }
          if (error instanceof CallerGone) goneSeries.inc();
          throw error;
        });
      };
      // Only query() is there: the page reads use nothing else, and a checked-out client would hold a connection outside the limit.
      return { pool: { query } as unknown as pg.Pool };
    },
  };
}
