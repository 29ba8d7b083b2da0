/**
 * The logging surface this package needs. A winston logger (what
 * `@roost/observability` hands out) satisfies it structurally, so this package
 * does not depend on a logging implementation.
 */
export interface EmbeddedLogger {
  debug?(message: string, meta?: Record<string, unknown>): void;
  info(message: string, meta?: Record<string, unknown>): void;
  warn(message: string, meta?: Record<string, unknown>): void;
  error(message: string, meta?: Record<string, unknown>): void;
}

/** Used when the caller passes no logger: a library never prints on its own. */
export const silentLogger: EmbeddedLogger = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/** Keeps the last lines a server printed, so a failed start can say why. */
export class RecentOutput {
  readonly #lines: string[] = [];

  constructor(private readonly capacity = 40) {}

  /** Splits a chunk into lines, stores them and returns the non-empty ones. */
  push(chunk: string): string[] {
    const lines = chunk
      .split(/\r?\n/)
      .map((line) => line.trimEnd())
      .filter((line) => line.length > 0);
    for (const line of lines) {
      this.#lines.push(line);
      if (this.#lines.length > this.capacity) this.#lines.shift();
    }
    return lines;
  }

  toString(): string {
    return this.#lines.length === 0 ? "(no output)" : this.#lines.join("\n");
  }
}
