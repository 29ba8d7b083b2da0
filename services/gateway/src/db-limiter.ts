import type pg from "pg";

/**
 * A cap on how many database statements of one kind run at once, and a pool
 * whose `query()` goes through one. The GraphQL context gives each operation
 * one (graphql.db-limiter.ts); the list pages share one per process
 * (`pageDb` in gateway.deps.ts).
 */
export interface Limiter {
  /**
   * Runs `task` once fewer than `max` tasks of this limiter are running;
   * tasks that wait start in call order. Resolves or rejects as the task does.
   */
  run<T>(task: () => Promise<T>): Promise<T>;
}

/** Tasks running and waiting, as `createLimiter`'s `observe` sees them after each change. */
export interface LimiterState {
  running: number;
  waiting: number;
}

export function createLimiter(max: number, observe?: (state: LimiterState) => void): Limiter {
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`Limiter max must be an integer >= 1, got ${max}`);
  let running = 0;
  const waiting: (() => void)[] = [];
  const changed = observe ? () => observe({ running, waiting: waiting.length }) : () => undefined;
  return {
    async run(task) {
      if (running < max) {
        running++;
        changed();
      } else {
        // A finishing task hands its slot to the first waiter, so a newcomer cannot jump the queue.
        await new Promise<void>((resolve) => {
          waiting.push(resolve);
          changed();
        });
      }
      try {
        return await task();
      } finally {
        const next = waiting.shift();
        if (next) next();
        else running--;
        changed();
      }
    },
  };
}

/**
 * `pool` with each `query()` run through `limiter`. `connect()` throws: a
 * client checked out would hold a connection outside the limit (`why` says
 * what to use instead). Everything else is the pool's own.
 */
export function limitedPool(pool: pg.Pool, limiter: Limiter, why: string): pg.Pool {
  const query = (...args: unknown[]) => limiter.run(() => Reflect.apply(pool.query, pool, args));
  const connect = () => {
    throw new Error(`connect() is not limited: ${why}`);
  };
  return new Proxy(pool, {
    get: (target, key) => (key === "query" ? query : key === "connect" ? connect : Reflect.get(target, key)),
  });
}
