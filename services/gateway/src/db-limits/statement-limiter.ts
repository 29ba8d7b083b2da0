import type pg from "pg";

/**
 * A cap on how many database statements of one kind run at once, and a pool whose `query()` goes through one.
 * The GraphQL context gives each operation one (graphql.context.ts); the list pages share one per process.
 */
export interface Limiter {
  /**
   * Runs `task` once fewer than `max` tasks of this limiter run. One `key`'s waiters start in call order; waiting keys
   * get freed slots in turn. Settles as the task does, or rejects with `LimiterWaitTimeout` once `maxWaitMs` passed,
   * or `CallerGone` (task not run) when `abandoned()` says so on the call or at its turn.
   */
  run<T>(task: () => Promise<T>, options?: RunOptions): Promise<T>;
}

export interface RunOptions {
  /** Asked on the call and again when a wait ends: true means nobody waits for the result any more, so the task is skipped. */
  abandoned?: () => boolean;
  /**
   * Whose task it is (a user id): keys take turns for freed slots, so a burst
   * from one key waits behind its own tasks, not in front of everyone
   * else's. Tasks without a key share one.
   */
  key?: string | number;
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

/** The key of tasks that name none. */
const SHARED = "";

export function createLimiter(max: number, { observe, maxWaitMs }: LimiterOptions = {}): Limiter {
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`Limiter max must be an integer >= 1, got ${max}`);
  if (maxWaitMs !== undefined && !(Number.isInteger(maxWaitMs) && maxWaitMs >= 1)) throw new RangeError(`Limiter maxWaitMs must be an integer >= 1, got ${maxWaitMs}`);
  let running = 0;
  let waiting = 0;
  // Each key's waiters in call order; the Map's own order is the keys' turns (a key served goes to the back).
  const lines = new Map<string | number, Waiter[]>();
  const changed = observe ? () => observe({ running, waiting }) : () => undefined;
  // A finishing task hands its slot to a waiter, so a newcomer cannot jump the queue.
  const release = () => {
    const nextKey = waiting === 0 ? undefined : lines.entries().next().value;
    if (nextKey === undefined) running--;
    else {
      const [key, line] = nextKey;
      const next = line.shift() as Waiter;
      lines.delete(key);
      if (line.length > 0) lines.set(key, line);
      waiting--;
      clearTimeout(next.timer);
      next.start();
    }
    changed();
  };
  const turn = (key: string | number) =>
    new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { start: resolve };
      if (maxWaitMs !== undefined) {
        waiter.timer = setTimeout(() => {
          const line = lines.get(key);
          const at = line ? line.indexOf(waiter) : -1;
          if (at === -1) return; // Its turn came first.
          line?.splice(at, 1);
          if (line?.length === 0) lines.delete(key);
          waiting--;
          changed();
          reject(new LimiterWaitTimeout(maxWaitMs));
        }, maxWaitMs);
        // A wait in line is no reason to keep a process that is shutting down alive.
        waiter.timer.unref();
      }
      const line = lines.get(key);
      if (line) line.push(waiter);
      else lines.set(key, [waiter]);
      waiting++;
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
        await turn(options?.key ?? SHARED);
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
