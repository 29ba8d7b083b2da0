import type { Logger } from "@roost/observability";
import { guardedGet, type OutboundGuard } from "@roost/net";
import { addressesIn } from "./anonymity.js";

/**
 * The checker's own public addresses, which a transparent proxy leaks to
 * judges: from `checker.ip_lookup` (through the guard), or, until a lookup
 * succeeds, the addresses a judge shows when asked directly.
 */
export class OwnAddress {
  #addresses: readonly string[] = [];
  #fromLookup = false;

  constructor(
    private readonly guard: OutboundGuard,
    private readonly logger: Logger,
    private readonly timeoutMs = 10_000,
  ) {}

  current(): readonly string[] {
    return this.#addresses;
  }

  /** Asks `lookupUrl` (an answer holding one address); on failure, asks the first judge that answers directly. */
  async refresh(lookupUrl: string, judgeUrls: readonly string[]): Promise<void> {
    if (lookupUrl !== "") {
      try {
        const response = await guardedGet(this.guard, lookupUrl, { timeoutMs: this.timeoutMs, maxBytes: 4096 });
        const found = addressesIn(response.body.toString("utf8"));
        if (response.status === 200 && found.length > 0) {
          this.#addresses = found;
          this.#fromLookup = true;
          return;
        }
        this.logger.warn("ip lookup gave no address", { status: response.status });
      } catch (error) {
        this.logger.warn("ip lookup failed", { error });
      }
    }
    if (this.#fromLookup && this.#addresses.length > 0) return;
    for (const url of judgeUrls) {
      try {
        const response = await guardedGet(this.guard, url, { timeoutMs: this.timeoutMs, maxBytes: 64 * 1024 });
        const judgeHost = new URL(response.url).hostname;
        const found = addressesIn(response.body.toString("utf8")).filter((address) => address !== judgeHost);
        if (found.length > 0) {
          this.#addresses = found;
          return;
        }
      } catch (error) {
        this.logger.debug("direct judge request failed", { judge: url, error });
      }
    }
  }
}
