import { setTimeout as delay } from "node:timers/promises";

export interface WaitUntilOptions {
  /** Give up after this long. */
  timeoutMs: number;
  /** Pause between checks. @defaultValue 100 */
  intervalMs?: number;
  /** Completes "timed out after N ms waiting for ..." in the error. */
  description: string;
}

/**
 * Polls `condition` until it holds or the deadline passes. An exception thrown
 * by `condition` ends the wait at once (use it for "the process died").
 */
export async function waitUntil(condition: () => boolean | Promise<boolean>, options: WaitUntilOptions): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${options.description}`);
    }
    await delay(options.intervalMs ?? 100);
  }
}

/** Resolves to true when `promise` settles within `timeoutMs`, false otherwise. */
export async function settlesWithin(promise: Promise<unknown>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([promise.then(() => true, () => true), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
