/**
 * Reputation (docs/reputation.md): a deterministic score 0..100 per protocol
 * from its uptime window, and the proxy's overall score is its best
 * protocol's. Labels: good >= 70, neutral >= 40, else poor; unknown under 3 results.
 */

export type ReputationLabel = "good" | "neutral" | "poor" | "unknown";

/** One protocol's latest state and its window (bit 0 the newest result, 1 = alive). */
export interface ProtocolWindow {
  history: bigint;
  /** Results in the window, 0..64. */
  length: number;
  /** Latest result's response time in ms (meaningful when it was alive). */
  responseMs: number;
  anonymity: string;
  alive: boolean;
}

export interface Reputation {
  score: number;
  label: ReputationLabel;
}

export const MIN_RESULTS = 3;
export const GOOD_AT = 70;
export const NEUTRAL_AT = 40;
/** Each older result counts this much less than the next newer one. */
export const RECENCY_DECAY = 0.9;
/** Latency score: full up to FAST_MS, zero from SLOW_MS, linear between. */
export const FAST_MS = 1000;
export const SLOW_MS = 10_000;
/** Failures in a row at which the streak part is all lost. */
export const STREAK_LIMIT = 5;
export const WEIGHTS = { uptime: 0.35, recency: 0.25, latency: 0.15, anonymity: 0.15, streak: 0.1 } as const;
const ANONYMITY_SCORE: Record<string, number> = { elite: 1, anonymous: 0.7, transparent: 0.3 };

/** Alive results among the window's `length` newest bits. */
export function uptimeCount(history: bigint, length: number): number {
  let count = 0;
  for (let bit = 0; bit < length; bit++) if ((history >> BigInt(bit)) & 1n) count++;
  return count;
}

/** The window after one more result: shifted by one, the new result in bit 0, at most 64 kept. */
export function pushResult(history: bigint, length: number, alive: boolean): { history: bigint; length: number } {
  const shifted = BigInt.asIntN(64, (history << 1n) | (alive ? 1n : 0n));
  return { history: shifted, length: Math.min(64, length + 1) };
}

export const labelOf = (score: number | null): ReputationLabel =>
  score === null ? "unknown" : score >= GOOD_AT ? "good" : score >= NEUTRAL_AT ? "neutral" : "poor";

/** The protocol's score, or null (unknown) under MIN_RESULTS results. */
export function protocolScore(window: ProtocolWindow): number | null {
  const n = window.length;
  if (n < MIN_RESULTS) return null;
  let weighted = 0;
  let weights = 0;
  let streak = 0;
  let streakOpen = true;
  for (let bit = 0; bit < n; bit++) {
    const alive = ((window.history >> BigInt(bit)) & 1n) === 1n;
    const weight = RECENCY_DECAY ** bit;
    weights += weight;
    if (alive) weighted += weight;
    if (streakOpen && !alive) streak++;
    else streakOpen = false;
  }
  const uptime = uptimeCount(window.history, n) / n;
  const recency = weighted / weights;
  const latency = window.alive ? Math.min(1, Math.max(0, (SLOW_MS - window.responseMs) / (SLOW_MS - FAST_MS))) : 0;
  const anonymity = window.alive ? (ANONYMITY_SCORE[window.anonymity] ?? 0) : 0;
  const streakScore = 1 - Math.min(streak, STREAK_LIMIT) / STREAK_LIMIT;
  const score =
    100 * (WEIGHTS.uptime * uptime + WEIGHTS.recency * recency + WEIGHTS.latency * latency + WEIGHTS.anonymity * anonymity + WEIGHTS.streak * streakScore);
  // Two decimals, so the stored real and every reader agree on the same number.
  return Math.round(score * 100) / 100;
}

/** Per protocol and overall (the best protocol's score; unknown when no protocol has enough results). */
export function reputationOf(windows: ReadonlyMap<string, ProtocolWindow>): { overall: Reputation; protocols: Map<string, Reputation> } {
  const protocols = new Map<string, Reputation>();
  let best: number | null = null;
  for (const [protocol, window] of windows) {
    const score = protocolScore(window);
    protocols.set(protocol, { score: score ?? 0, label: labelOf(score) });
    if (score !== null && (best === null || score > best)) best = score;
  }
  return { overall: { score: best ?? 0, label: labelOf(best) }, protocols };
}
