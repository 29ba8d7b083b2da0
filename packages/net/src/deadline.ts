import { DeadlineExceededError } from "./outbound-errors.js";

/**
 * One deadline for a whole operation: its signal aborts with a
 * DeadlineExceededError when `ms` pass, or with the parent's reason when the
 * caller aborts first. Call `clear()` when done so the timer goes away.
 */
export class Deadline {
  readonly signal: AbortSignal;
  readonly startedAt = performance.now();
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout;
  readonly #parent: AbortSignal | undefined;
  readonly #onParentAbort = (): void => this.#controller.abort(this.#parent?.reason);

  constructor(readonly ms: number, parent?: AbortSignal) {
    this.signal = this.#controller.signal;
    this.#parent = parent;
    this.#timer = setTimeout(() => this.#controller.abort(new DeadlineExceededError(ms)), ms);
    if (parent?.aborted) this.#onParentAbort();
    else parent?.addEventListener("abort", this.#onParentAbort, { once: true });
  }

  remainingMs(): number {
    return Math.max(0, this.ms - (performance.now() - this.startedAt));
  }

  /** Throws the abort reason when the deadline passed or the caller aborted. */
  throwIfExpired(): void {
    if (this.signal.aborted) throw this.signal.reason;
  }

  clear(): void {
    clearTimeout(this.#timer);
    this.#parent?.removeEventListener("abort", this.#onParentAbort);
  }
}

/** Settles with `promise`, or rejects with the signal's reason as soon as it aborts. */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
