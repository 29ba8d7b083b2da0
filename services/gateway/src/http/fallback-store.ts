import { MemoryStore, type ClientRateLimitInfo, type IncrementResponse, type Options, type Store } from "express-rate-limit";

/** How long the shared store is left alone after it failed, before it is tried again (ms). */
const SHARED_STORE_RETRY_MS = 5_000;

/**
 * A rate-limit store that counts in Redis (shared by every instance) and,
 * while Redis is unavailable, in this process: the limits still hold per
 * instance instead of failing open. After a failure Redis is left alone for
 * a few seconds, so a stalled Redis does not delay every limited request.
 */
export class FallbackStore implements Store {
  readonly localKeys = false;
  private readonly local = new MemoryStore();
  private sharedDownUntil = 0;

  constructor(
    private readonly shared: Store,
    private readonly onSharedFailure: (error: unknown) => void,
  ) {}

  get prefix(): string | undefined {
    return this.shared.prefix;
  }

  init(options: Options): void {
    void this.shared.init?.(options);
    this.local.init(options);
  }

  private async either<T>(useShared: () => Promise<T> | T, useLocal: () => Promise<T> | T): Promise<T> {
    if (Date.now() >= this.sharedDownUntil) {
      try {
        return await useShared();
      } catch (error) {
        this.sharedDownUntil = Date.now() + SHARED_STORE_RETRY_MS;
        this.onSharedFailure(error);
      }
    }
    return useLocal();
  }

  async get(key: string): Promise<ClientRateLimitInfo | undefined> {
    return this.either(
      () => this.shared.get?.(key),
      () => this.local.get(key),
    );
  }

  async increment(key: string): Promise<IncrementResponse> {
    return this.either(
      () => this.shared.increment(key),
      () => this.local.increment(key),
    );
  }

  async decrement(key: string): Promise<void> {
    await this.either(
      () => this.shared.decrement(key),
      () => this.local.decrement(key),
    );
  }

  async resetKey(key: string): Promise<void> {
    await Promise.allSettled([this.shared.resetKey(key), this.local.resetKey(key)]);
  }

  shutdown(): void {
    this.local.shutdown();
  }
}
