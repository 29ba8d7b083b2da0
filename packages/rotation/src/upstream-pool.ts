/** One upstream proxy a rotator may forward through. */
export interface Upstream {
  proxyId: number;
  ip: string;
  port: number;
  /** Empty when the proxy has no credentials. */
  username: string;
  password: string;
  /** ISO code upper case, `N/A` when unknown. */
  country: string;
}

export interface PickOptions {
  session?: string;
  country?: string;
}

export interface UpstreamPoolOptions {
  /** Consecutive failures that bench an upstream. @defaultValue 3 */
  benchAfterFailures?: number;
  /** How long a benched upstream is skipped, in ms. @defaultValue 30000 */
  benchMs?: number;
  /** Sticky sessions kept per rotator; the oldest go first. @defaultValue 10000 */
  maxSessions?: number;
  now?: () => number;
}

interface Ring {
  /** In proxy id order. */
  members: Upstream[];
  /** Index of the member due next. */
  cursor: number;
}

/** Where a ring continues over new members: at the old ring's due member, or the first after it by id. */
function continueAt(old: Ring | undefined, members: readonly Upstream[]): number {
  const due = old?.members[old.cursor]?.proxyId;
  if (due === undefined) return 0;
  const index = members.findIndex((member) => member.proxyId >= due);
  return index === -1 ? 0 : index;
}

/**
 * A rotator's selection in memory: round robin over the current upstreams
 * (all, or one country's), sticky sessions, and a bench for upstreams that
 * keep failing. The ring is in proxy id order, the rotation `next` of the API
 * walks too; `replace` swaps the set and continues with the member that was
 * due (or the first one after it by id), so a refresh neither skips nor repeats.
 */
export class UpstreamPool {
  private all: Ring = { members: [], cursor: 0 };
  private byCountry = new Map<string, Ring>();
  private byId = new Map<number, Upstream>();
  private readonly failures = new Map<number, number>();
  private readonly benchedUntil = new Map<number, number>();
  private readonly sessions = new Map<string, number>();
  private readonly benchAfterFailures: number;
  private readonly benchMs: number;
  private readonly maxSessions: number;
  private readonly now: () => number;

  constructor(options: UpstreamPoolOptions = {}) {
    this.benchAfterFailures = options.benchAfterFailures ?? 3;
    this.benchMs = options.benchMs ?? 30_000;
    this.maxSessions = options.maxSessions ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.all.members.length;
  }

  replace(upstreams: readonly Upstream[]): void {
    const sorted = [...upstreams].sort((a, b) => a.proxyId - b.proxyId);
    const countries = new Map<string, Upstream[]>();
    for (const upstream of sorted) {
      const list = countries.get(upstream.country);
      if (list) list.push(upstream);
      else countries.set(upstream.country, [upstream]);
    }
    const byCountry = new Map<string, Ring>();
    for (const [country, members] of countries) byCountry.set(country, { members, cursor: continueAt(this.byCountry.get(country), members) });
    this.all = { members: sorted, cursor: continueAt(this.all, sorted) };
    this.byCountry = byCountry;
    this.byId = new Map(upstreams.map((upstream) => [upstream.proxyId, upstream]));
    for (const id of this.failures.keys()) if (!this.byId.has(id)) this.failures.delete(id);
    for (const id of this.benchedUntil.keys()) if (!this.byId.has(id)) this.benchedUntil.delete(id);
  }

  /**
   * The upstream for one request or tunnel; undefined when none matches.
   * `exclude` holds upstreams that already failed this request (failover).
   */
  pick(options: PickOptions = {}, exclude?: ReadonlySet<number>): Upstream | undefined {
    const sessionKey = options.session === undefined ? undefined : `${options.country ?? ""}|${options.session}`;
    if (sessionKey !== undefined) {
      const id = this.sessions.get(sessionKey);
      const kept = id === undefined ? undefined : this.byId.get(id);
      if (kept && !exclude?.has(kept.proxyId) && !this.isBenched(kept.proxyId)) return kept;
    }
    const ring = options.country === undefined ? this.all : this.byCountry.get(options.country);
    const chosen = ring ? this.advance(ring, exclude) : undefined;
    if (chosen && sessionKey !== undefined) this.remember(sessionKey, chosen.proxyId);
    return chosen;
  }

  /** A failed connect or handshake; enough in a row bench the upstream. */
  reportFailure(proxyId: number): void {
    const count = (this.failures.get(proxyId) ?? 0) + 1;
    if (count >= this.benchAfterFailures) {
      this.failures.delete(proxyId);
      this.benchedUntil.set(proxyId, this.now() + this.benchMs);
    } else {
      this.failures.set(proxyId, count);
    }
  }

  reportSuccess(proxyId: number): void {
    this.failures.delete(proxyId);
  }

  isBenched(proxyId: number): boolean {
    const until = this.benchedUntil.get(proxyId);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.benchedUntil.delete(proxyId);
    return false;
  }

  /** Next member in ring order; benched ones only when nothing else is left. */
  private advance(ring: Ring, exclude?: ReadonlySet<number>): Upstream | undefined {
    const { members } = ring;
    let fallback: Upstream | undefined;
    for (let step = 0; step < members.length; step++) {
      const index = (ring.cursor + step) % members.length;
      const candidate = members[index];
      if (!candidate || exclude?.has(candidate.proxyId)) continue;
      if (this.isBenched(candidate.proxyId)) {
        fallback ??= candidate;
        continue;
      }
      ring.cursor = (index + 1) % members.length;
      return candidate;
    }
    return fallback;
  }

  private remember(sessionKey: string, proxyId: number): void {
    this.sessions.delete(sessionKey);
    this.sessions.set(sessionKey, proxyId);
    if (this.sessions.size > this.maxSessions) {
      const oldest = this.sessions.keys().next();
      if (!oldest.done) this.sessions.delete(oldest.value);
    }
  }
}
