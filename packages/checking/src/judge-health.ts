import type { Logger } from "@roost/observability";
import { guardedGet, type GuardedTlsOptions, type OutboundGuard } from "@roost/net";

export interface JudgeHealthOptions {
  /** Per probe, in ms. @defaultValue 5000 */
  timeoutMs?: number;
  /** Judges with a series of their own in svc_judge_up besides the global ones; the rest share `other`. @defaultValue 100 */
  maxLabelled?: number;
  tls?: GuardedTlsOptions;
  /** Reports each judge's state (1 up, 0 down) by label, and the share of the others that are up. */
  report?(label: string, up: number): void;
}

/** `scheme://host:port` of a judge: never its path or query, which may hold a key. */
export function judgeLabel(url: string): string {
  try {
    const parsed = new URL(url);
    const port = parsed.port || (parsed.protocol === "https:" ? "443" : "80");
    return `${parsed.protocol}//${parsed.hostname}:${port}`;
  } catch {
    return "invalid";
  }
}

/**
 * Whether each judge in use answers when asked directly (no proxy): a judge
 * that fails is marked down, skipped by the checks and never blamed on
 * proxies; the next probe that succeeds brings it back.
 */
export class JudgeHealth {
  readonly #down = new Set<string>();
  readonly #timeoutMs: number;

  constructor(
    private readonly guard: OutboundGuard,
    private readonly logger: Logger,
    private readonly options: JudgeHealthOptions = {},
  ) {
    this.#timeoutMs = options.timeoutMs ?? 5000;
  }

  /** Judges never probed count as up. */
  isUp(url: string): boolean {
    return !this.#down.has(url);
  }

  /** Probes each judge once (a few at a time) and reports the states; `global` judges always get a series of their own. */
  async probeAll(global: readonly string[], users: readonly string[]): Promise<void> {
    const all = [...new Set([...global, ...users])];
    const results = new Map<string, boolean>();
    for (let at = 0; at < all.length; at += 8) {
      await Promise.all(
        all.slice(at, at + 8).map(async (url) => {
          results.set(url, await this.#answers(url));
        }),
      );
    }
    for (const [url, up] of results) {
      const wasUp = !this.#down.has(url);
      if (up) this.#down.delete(url);
      else this.#down.add(url);
      if (wasUp !== up) this.logger.warn(up ? "judge is up again" : "judge is down: its checks are skipped", { judge: judgeLabel(url) });
    }
    this.#report(global, users, results);
  }

  async #answers(url: string): Promise<boolean> {
    try {
      const response = await guardedGet(this.guard, url, { timeoutMs: this.#timeoutMs, maxBytes: 64 * 1024, ...(this.options.tls && { tls: this.options.tls }) });
      return response.status >= 200 && response.status < 300;
    } catch {
      return false;
    }
  }

  #report(global: readonly string[], users: readonly string[], results: ReadonlyMap<string, boolean>): void {
    const report = this.options.report;
    if (!report) return;
    const labelled = new Set([...global, ...users.slice(0, this.options.maxLabelled ?? 100)]);
    const others = [...results.keys()].filter((url) => !labelled.has(url));
    const byLabel = new Map<string, boolean>();
    for (const url of labelled) byLabel.set(judgeLabel(url), (byLabel.get(judgeLabel(url)) ?? true) && (results.get(url) ?? true));
    for (const [label, up] of byLabel) report(label, up ? 1 : 0);
    if (others.length > 0) report("other", others.filter((url) => results.get(url) === true).length / others.length);
  }
}
