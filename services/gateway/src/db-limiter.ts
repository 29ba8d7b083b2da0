import type pg from "pg";

/**
 * A cap on how many database statements of one kind run at once, and a pool
 * whose `query()` goes through one. The GraphQL context gives each operation
 * one (graphql.context.ts); the list pages share one per process
 * (routes/proxies/page-statements.ts).
 */
export interface Limiter {
  /**
   * Runs `task` once fewer than `max` tasks of this limiter are running;
   * tasks that wait start in call order. Resolves or rejects as the task does;
   * rejects with `LimiterWaitTimeout` when the limiter's `maxWaitMs` passed
   * first, and with `CallerGone` (the task not run) when `abandoned()` says so
   * on the call or at its turn.
   */
  run<T>(task: () => Promise<T>, options?: RunOptions): Promise<T>;
}

export interface RunOptions {
  /** Asked on the call and again when a wait ends: true means nobody waits for the result any more, so the task is skipped. */
  abandoned?: () => boolean;
}

/** Tasks running and waiting, as `createLimiter`'s `observe` sees them after each change. */
export interface LimiterState {
  running: number;
  waiting: number;
}

export interface LimiterOptions {
  observe?: (state: LimiterState) => void;
  /** Milliseconds a task may wait for its turn; no deadline when absent. */
  maxWaitMs?: number;
}

/** A task's wait for its turn passed the limiter's `maxWaitMs`; it did not run. */
export class LimiterWaitTimeout extends Error {
  constructor(readonly waitedMs: number) {
    super(`Waited ${waitedMs} ms for a turn`);
    this.name = "LimiterWaitTimeout";
  }
}

/** A task whose caller had gone by its turn; it did not run. */
export class CallerGone extends Error {
  constructor() {
    super("The caller had gone when the task's turn came");
    this.name = "CallerGone";
  }
}

interface Waiter {
  start: () => void;
  timer?: NodeJS.Timeout;
}

export function createLimiter(max: number, { observe, maxWaitMs }: LimiterOptions = {}): Limiter {
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`Limiter max must be an integer >= 1, got ${max}`);
  if (maxWaitMs !== undefined && !(Number.isInteger(maxWaitMs) && maxWaitMs >= 1)) throw new RangeError(`Limiter maxWaitMs must be an integer >= 1, got ${maxWaitMs}`);
  let running = 0;
  const queue: Waiter[] = [];
  const changed = observe ? () => observe({ running, waiting: queue.length }) : () => undefined;
  // A finishing task hands its slot to the first waiter, so a newcomer cannot jump the queue.
  const release = () => {
    const next = queue.shift();
    if (next) {
      clearTimeout(next.timer);
      next.start();
    } else running--;
    changed();
  };
  const turn = () =>
    new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { start: resolve };
      if (maxWaitMs !== undefined) {
        waiter.timer = setTimeout(() => {
          const at = queue.indexOf(waiter);
          if (at === -1) return; // Its turn came first.
          queue.splice(at, 1);
          changed();
          reject(new LimiterWaitTimeout(maxWaitMs));
        }, maxWaitMs);
        // A wait in line is no reason to keep a process that is shutting down alive.
        waiter.timer.unref();
      }
      queue.push(waiter);
      changed();
    });
  return {
    async run(task, options) {
      const abandoned = options?.abandoned;
      if (abandoned?.()) throw new CallerGone();
      if (running < max) {
        running++;
        changed();
      } else {
        await turn();
        // The task holds a slot from here on; its caller may have left while it waited.
        if (abandoned?.()) {
          release();
          throw new CallerGone();
        }
      }
      try {
        return await task();
      } finally {
        release();
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
