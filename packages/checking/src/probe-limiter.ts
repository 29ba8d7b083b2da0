/**
 * How many probes run at once in this process: `checker.concurrency` from
 * the global config, applied live (a lower limit lets running probes finish),
 * never above the process's hard cap.
 */
export class ProbeLimiter {
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(
    private limit: number,
    private readonly hardCap: number,
  ) {}

  get inFlight(): number {
    return this.#running;
  }

  get queued(): number {
    return this.#waiting.length;
  }

  setLimit(limit: number): void {
    this.limit = limit;
    this.#drain();
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#running >= this.#max()) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#running++;
    try {
      return await task();
    } finally {
      this.#running--;
      this.#drain();
    }
  }

  #max(): number {
    return Math.max(1, Math.min(this.limit, this.hardCap));
  }

  #drain(): void {
    while (this.#running < this.#max()) {
      const next = this.#waiting.shift();
      if (!next) return;
      this.#running++;
      next();
    }
  }
}
