/**
 * Database statements one GraphQL operation may have running at once; 2.
 * Apollo resolves root fields in parallel, and the cost limit lets ~470
 * aliases of `proxies { total }` into one request: unlimited, they would
 * take every connection of the gateway's pool (10) for seconds and the rest
 * of the API, other users too, would wait and fail on its connect timeout.
 * Two is what a client gets from two REST calls at once: aliases make an
 * operation slower, never wider.
 */
export const GRAPHQL_DB_CONCURRENCY = 2;

export interface Limiter {
  /**
   * Runs `task` once fewer than `max` tasks of this limiter are running;
   * tasks that wait start in call order. Resolves or rejects as the task does.
   */
  run<T>(task: () => Promise<T>): Promise<T>;
}

export function createLimiter(max: number): Limiter {
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`Limiter max must be an integer >= 1, got ${max}`);
  let running = 0;
  const waiting: (() => void)[] = [];
  return {
    async run(task) {
      if (running < max) running++;
      // A finishing task hands its slot to the first waiter, so a newcomer cannot jump the queue.
      else await new Promise<void>((resolve) => waiting.push(resolve));
      try {
        return await task();
      } finally {
        const next = waiting.shift();
        if (next) next();
        else running--;
      }
    },
  };
}
