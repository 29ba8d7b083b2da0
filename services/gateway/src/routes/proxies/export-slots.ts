/**
 * How many exports may stream at once. An export holds a pooled database
 * connection for as long as its client takes to read it, so without a cap a
 * few clients that never read (or one user's many tabs) would hold every
 * connection and the rest of the API would wait for one until it failed.
 * At most `total` at a time in this process, leaving the rest of the pool to
 * other requests, and at most `perUser` of them for one user.
 */
export class ExportSlots {
  private inUse = 0;
  private readonly byUser = new Map<number, number>();

  constructor(
    readonly total: number,
    readonly perUser: number,
  ) {}

  /**
   * A slot for `userId` and the function that gives it back (once), or why
   * there is none.
   */
  take(userId: number): { release: () => void } | { refused: "user" | "total" } {
    const mine = this.byUser.get(userId) ?? 0;
    if (mine >= this.perUser) return { refused: "user" };
    if (this.inUse >= this.total) return { refused: "total" };
    this.inUse++;
    this.byUser.set(userId, mine + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.inUse--;
        const left = (this.byUser.get(userId) ?? 1) - 1;
        if (left === 0) this.byUser.delete(userId);
        else this.byUser.set(userId, left);
      },
    };
  }
}

/** The slots for a pool of `poolSize` connections: two always left to other requests; two per user. */
export function exportSlotsFor(poolSize: number): ExportSlots {
  return new ExportSlots(Math.max(1, poolSize - 2), 2);
}
