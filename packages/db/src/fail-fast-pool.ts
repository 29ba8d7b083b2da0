import pg from "pg";

/** Refused at once while the pool knows the database did not answer a moment ago. */
export class DatabaseUnavailableError extends Error {
  constructor(cause?: unknown) {
    super("database unavailable: it did not answer a moment ago", { cause });
    this.name = "DatabaseUnavailableError";
  }
}

/**
 * A query past its client-side deadline (the server's own statement_timeout
 * is shorter, so only a server that stopped answering gets there) or a
 * refused connection. Not a slow new connection or a wait for a busy pool,
 * which a loaded but working server also causes.
 */
function isStall(error: unknown): boolean {
  return error instanceof Error && /query read timeout|ECONNREFUSED/i.test(`${error.message} ${String((error as { code?: unknown }).code)}`);
}

type ConnectCallback = Parameters<pg.Pool["connect"]>[0];

/**
 * A pool that, once the server failed to answer (a query past its
 * client-side deadline, a refused connection), refuses
 * connections at once for `failFastMs`. A request that already waited on one
 * deadline then answers instead of waiting on a second one, and requests in
 * between do not pile up; after the window the next caller tries for real.
 */
export class FailFastPool extends pg.Pool {
  private unavailableUntil = 0;
  private lastFailure: unknown;

  constructor(config: pg.PoolConfig, private readonly failFastMs: number) {
    super(config);
    // Errors of pool.query() come back through release.
    this.on("release", (error: unknown) => this.noteFailure(error));
  }

  /** Records a failure seen by a caller; only stalls open the window. */
  noteFailure(error: unknown): void {
    if (!isStall(error)) return;
    this.lastFailure = error;
    this.unavailableUntil = Date.now() + this.failFastMs;
  }

  override connect(): Promise<pg.PoolClient>;
  override connect(callback: ConnectCallback): void;
  override connect(callback?: ConnectCallback): Promise<pg.PoolClient> | void {
    if (Date.now() < this.unavailableUntil) {
      const error = new DatabaseUnavailableError(this.lastFailure);
      if (!callback) return Promise.reject(error);
      process.nextTick(() => callback(error, undefined, () => undefined));
      return;
    }
    if (!callback) {
      return super.connect().catch((error: unknown) => {
        this.noteFailure(error);
        throw error;
      });
    }
    super.connect((error, client, done) => {
      if (error) this.noteFailure(error);
      callback(error, client, done);
    });
  }
}
