/**
 * How many uploads and exports may hold a connection for as long as their client takes, so slow clients cannot hold
 * the whole pool: at most `total` per process and `perUser[kind]` per user. An export gets a slot or a 429 at once; an
 * upload waits in line (body unread) unless the line is full, and may take a free `extra` slot for a second connection.
 */
export type SlotKind = "upload" | "export";

/** A slot held; `release` gives it back (once: later calls do nothing). */
export interface Slot {
  release(): void;
}

/** No slot now, and no room to wait for one (429). */
export class SlotsBusyError extends Error {
  override readonly name = "SlotsBusyError";
  constructor(
    /** The user's own limit, everyone's, or an upload that waited its longest in line. */
    readonly refused: "user" | "total" | "waited",
  ) {
    super(refused === "user" ? "too many in progress for this user" : refused === "total" ? "too many in progress" : "waited too long for a turn");
  }
}

export interface SlotLimits {
  /** Slots held at once in all (the pool's size less what other requests need). */
  total: number;
  /** Slots of each kind one user may hold at once. */
  perUser: Record<SlotKind, number>;
  /** Uploads that may wait in line: per user and in all. */
  waiting: { perUser: number; total: number };
}

/** What is held and waiting now, for the metrics (`svc_connection_slots`). */
export interface SlotsState {
  held: Record<SlotKind | "extra", number>;
  waiting: number;
}

interface Waiter {
  userId: number;
  grant(slot: Slot): void;
}

export class ConnectionSlots {
  private inUse = 0;
  private readonly heldByKind: Record<SlotKind | "extra", number> = { upload: 0, export: 0, extra: 0 };
  /** Slots held per user and kind (`upload:7`). */
  private readonly held = new Map<string, number>();
  /** Uploads waiting, first come first served among those whose user may take one. */
  private readonly waiting: Waiter[] = [];

  constructor(
    readonly limits: SlotLimits,
    /** Called after every change. */
    private readonly observe: (state: SlotsState) => void = () => undefined,
  ) {
    this.changed();
  }

  get state(): SlotsState {
    return { held: { ...this.heldByKind }, waiting: this.waiting.length };
  }

  /** An export's slot, or why there is none. */
  take(userId: number, kind: SlotKind): Slot {
    if (this.heldBy(userId, kind) >= this.limits.perUser[kind]) throw new SlotsBusyError("user");
    // A slot given back goes to the line first, so a free one is nobody's in line.
    if (this.inUse >= this.limits.total) throw new SlotsBusyError("total");
    return this.hold(userId, kind);
  }

  /**
   * An upload's slot once its turn comes. Rejects with SlotsBusyError when
   * the line is full or after `maxWaitMs` in it, and with the signal's
   * reason when the request goes away first (it leaves the line either way).
   */
  wait(userId: number, signal: AbortSignal, maxWaitMs: number): Promise<Slot> {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    // A free slot is nobody's in line (serveLine), so a user who may take one takes it now.
    if (this.inUse < this.limits.total && this.heldBy(userId, "upload") < this.limits.perUser.upload) return Promise.resolve(this.hold(userId, "upload"));
    const mine = this.waiting.filter((waiter) => waiter.userId === userId).length;
    if (mine >= this.limits.waiting.perUser) return Promise.reject(new SlotsBusyError("user"));
    if (this.waiting.length >= this.limits.waiting.total) return Promise.reject(new SlotsBusyError("total"));
    return new Promise<Slot>((resolve, reject) => {
      const leave = (reason: Error): void => {
        clearTimeout(deadline);
        signal.removeEventListener("abort", gone);
        const index = this.waiting.indexOf(waiter);
        if (index >= 0) this.waiting.splice(index, 1);
        this.changed();
        reject(reason);
      };
      const gone = (): void => leave(signal.reason as Error);
      const deadline = setTimeout(() => leave(new SlotsBusyError("waited")), maxWaitMs);
      deadline.unref();
      const waiter: Waiter = {
        userId,
        grant: (slot) => {
          clearTimeout(deadline);
          signal.removeEventListener("abort", gone);
          resolve(slot);
        },
      };
      signal.addEventListener("abort", gone, { once: true });
      this.waiting.push(waiter);
      this.changed();
    });
  }

  /** A slot for an upload's second connection when one is free now (so nobody in line may take it); otherwise null. */
  takeExtra(): Slot | null {
    if (this.inUse >= this.limits.total) return null;
    this.inUse++;
    this.heldByKind.extra++;
    this.changed();
    return this.once(() => {
      this.inUse--;
      this.heldByKind.extra--;
      this.serveLine();
      this.changed();
    });
  }

  private heldBy(userId: number, kind: SlotKind): number {
    return this.held.get(`${kind}:${userId}`) ?? 0;
  }

  private hold(userId: number, kind: SlotKind): Slot {
    const key = `${kind}:${userId}`;
    this.inUse++;
    this.heldByKind[kind]++;
    this.held.set(key, (this.held.get(key) ?? 0) + 1);
    this.changed();
    return this.once(() => {
      this.inUse--;
      this.heldByKind[kind]--;
      const left = (this.held.get(key) ?? 1) - 1;
      if (left === 0) this.held.delete(key);
      else this.held.set(key, left);
      this.serveLine();
      this.changed();
    });
  }

  private changed(): void {
    this.observe(this.state);
  }

  private once(give: () => void): Slot {
    let given = false;
    return {
      release: () => {
        if (given) return;
        given = true;
        give();
      },
    };
  }

  /**
   * Grants free slots to the first waiting uploads whose users may take one.
   * Runs on every change, so while a slot is free nobody in line may take it.
   */
  private serveLine(): void {
    for (let index = 0; index < this.waiting.length && this.inUse < this.limits.total; ) {
      const waiter = this.waiting[index];
      if (waiter === undefined || this.heldBy(waiter.userId, "upload") >= this.limits.perUser.upload) {
        index++;
        continue;
      }
      this.waiting.splice(index, 1);
      waiter.grant(this.hold(waiter.userId, "upload"));
    }
  }
}

/**
 * The slots for a pool of `poolSize` connections: two always left to other requests; two exports and one upload per
 * user (a user's uploads take turns under the upload lock anyway); four uploads of one user and 64 in all may wait.
 */
export function connectionSlotsFor(poolSize: number, observe?: (state: SlotsState) => void): ConnectionSlots {
  return new ConnectionSlots(
    {
      total: Math.max(1, poolSize - 2),
      perUser: { upload: 1, export: 2 },
      waiting: { perUser: 4, total: 64 },
    },
    observe,
  );
}
