import { performance } from "node:perf_hooks";
import type pg from "pg";
import type { GeoDatabase } from "@roost/geo";
import { classifyLine, formatIpv4, isReservedIpv4, LineSplitter, scanCommonLine, type CommonLine, type ProxyScheme, type SplitLine } from "@roost/net";
import type { Logger } from "@roost/observability";
import { CHECK_WAKE_JOB_ID, type checkQueue, type Producer } from "@roost/queue";
import { countUserProxies, foldUserCounters, type SqlPool } from "../proxy-read.repository.js";
import {
  blacklistHasRanges,
  holdUserRow,
  insertProxiesWithin,
  linkProxiesToSource,
  lockUserUploads,
  sourceBelongsTo,
  selectBlacklisted,
  selectOwnedPositions,
  userHasProxies,
  ProxyCopier,
  type ProxyInsertBatch,
} from "./ingest.repository.js";
import { ProxyCopyText } from "./proxy-copy-text.js";
import { UploadIdentities } from "./upload-identities.js";

/** The uploading user's account was deleted after the request was authenticated (401). */
export class AccountGoneError extends Error {
  override readonly name = "AccountGoneError";
}

/** The `sourceId` given to an ingest is not a scrape source of that user. */
export class UnknownSourceError extends Error {
  override readonly name = "UnknownSourceError";
}

/** A database connection's share given to an ingest by its caller, handed back with the connection. */
export interface Slot {
  release(): void;
}

/** A batch ready to store: its rows as COPY text plus what the SQL paths need. */
interface PreparedBatch {
  /** Numbers (UploadIdentities) of the batch's proxies, in order. */
  numbers: number[];
  text: ProxyCopyText;
  /** Ids taken for the COPY ahead of time (ProxyCopier.reserveIds), when the COPY path is expected. */
  ids?: Promise<number[]>;
}

/**
 * The pool an upload draws its connections from. The counters (pg.Pool has
 * them) tell whether a second connection is free right now; without them an
 * upload stays on one connection.
 */
export type UploadPool = Pick<pg.Pool, "connect" | "query"> & Partial<Pick<pg.Pool, "idleCount" | "totalCount" | "waitingCount" | "options">>;

/** A connection storing batches: its transaction, its COPY state and the batch it is storing. */
interface StoreLane {
  client: pg.PoolClient;
  copier: ProxyCopier;
  storing: Promise<void> | null;
  /** The second connection's slot (ConnectionSlots), given back with the connection. */
  slot?: Slot;
}

/** Gives a lane's connection back to the pool (destroyed when its state is unknown), and its slot. */
function releaseLane(lane: StoreLane, destroy = false): void {
  lane.client.release(destroy);
  lane.slot?.release();
}

/** The contract's Proxy upload details plus `limitExceededCount` (DESIGN.md "Proxies"). */
export interface UploadDetails {
  submittedCount: number;
  parsedCount: number;
  invalidFormatCount: number;
  invalidIpCount: number;
  invalidIpv4Count: number;
  invalidPortCount: number;
  blacklistedCount: number;
  /** Distinct new proxies not stored because the user reached proxy_limits. */
  limitExceededCount: number;
  processingMs: number;
}

export interface UploadOutcome {
  /** Distinct proxies of this upload that are in the user's list now. */
  proxyCount: number;
  details: UploadDetails;
  /** Ids created by this upload, ascending. */
  newProxyIds: number[];
}

export interface UploadSessionOptions {
  pool: UploadPool;
  geo: GeoDatabase;
  userId: number;
  /** ALLOW_PRIVATE_NETWORK_TARGETS: reserved ranges are accepted. */
  allowPrivateTargets: boolean;
  /** Most proxies the user may hold (proxy_limits), or null for no limit. */
  maxProxies: number | null;
  /**
   * A slot for the second connection (ConnectionSlots.takeExtra), or null
   * when none is free: the upload then stays on one. Without it only the
   * pool's own counters decide.
   */
  extraSlot?: () => Slot | null;
  /** A scrape source of the user: every proxy of the ingest is linked to it (`proxy_sources`). */
  sourceId?: number;
  /** With `sourceId`: the links' `last_seen_at` (the scrape's time); default now. */
  seenAt?: Date;
  /** Distinct proxies per INSERT statement; default 10000. */
  batchSize?: number;
  /** performance.now() when the request arrived; processingMs counts from it. */
  startedAt?: number;
}

/**
 * Bytes (or characters of a text field) fed to the splitter at once. While a batch is being stored the session
 * yields to the event loop after each slice, so PostgreSQL's answers wait at most one slice of parsing.
 */
const SLICE = 16 * 1024;

/**
 * One upload: lines are split, classified and counted as they stream in; new distinct proxies are stored in batches,
 * every other one on a second connection when free (no proxy_limits). Both transactions commit only after the last
 * byte, so a 413, an error or an abort stores nothing. Counting and connections: docs/proxies.md, "Upload".
 */
export class ProxyUploadSession {
  private readonly splitter = new LineSplitter();
  private readonly counts = {
    submittedCount: 0,
    parsedCount: 0,
    invalidFormatCount: 0,
    invalidIpCount: 0,
    invalidIpv4Count: 0,
    invalidPortCount: 0,
    blacklistedCount: 0,
    limitExceededCount: 0,
  };
  private readonly proxies = new UploadIdentities();
  /** Number of the first proxy not yet handed to the database. */
  private pendingStart = 0;
  /** Ids stored, by batch: flattened in batch order at commit (ascending, as taken). */
  private readonly idsByBatch: number[][] = [];
  private batches = 0;
  private accepted = 0;
  private room: number | null;
  /** The connection with the transaction that holds the upload lock; a second one, once it is open. */
  private readonly lanes: StoreLane[];
  /** The second connection being opened (null: not asked for, or none to spare). */
  private spare: Promise<StoreLane | null> | null = null;
  /** The session ended while the second connection was still being opened: it is rolled back on arrival. */
  private spareGivenUp = false;
  /** The last id reservation: each batch's starts after the previous batch's, on whichever connection. */
  private lastReservation: Promise<unknown> = Promise.resolve();
  private closed = false;
  private readonly batchSize: number;
  private readonly onLine = (line: SplitLine): void => this.take(line);

  private constructor(
    private readonly options: UploadSessionOptions,
    client: pg.PoolClient,
    private readonly blacklistActive: boolean,
    /** False when the user's list was empty at the start: nothing to look up (the lock keeps it so). */
    private readonly probeOwned: boolean,
    room: number | null,
  ) {
    this.room = room;
    this.batchSize = options.batchSize ?? 10_000;
    this.lanes = [{ client, copier: new ProxyCopier(client, options.userId), storing: null }];
  }

  /**
   * Opens the transaction, takes the upload lock and holds the user's row until the commit (the first connection
   * commits last), so an account deleted meanwhile is purged only after this upload's rows are in;
   * AccountGoneError when it is gone already.
   */
  static async open(options: UploadSessionOptions): Promise<ProxyUploadSession> {
    const client = await options.pool.connect();
    try {
      await client.query("BEGIN");
      await lockUserUploads(client, options.userId);
      if (!(await holdUserRow(client, options.userId))) throw new AccountGoneError("the account was deleted");
      if (options.sourceId !== undefined && !(await sourceBelongsTo(client, options.userId, options.sourceId))) {
        throw new UnknownSourceError(`scrape source ${options.sourceId} is not the user's`);
      }
      const blacklistActive = await blacklistHasRanges(client);
      const probeOwned = await userHasProxies(client, options.userId);
      const room = options.maxProxies === null ? null : Math.max(0, options.maxProxies - (await countUserProxies(client, options.userId)));
      return new ProxyUploadSession(options, client, blacklistActive, probeOwned, room);
    } catch (error) {
      await client.query("ROLLBACK").catch(() => undefined);
      client.release(true);
      throw error;
    }
  }

  /** Feeds bytes of a file part (any chunking; UTF-8 split across chunks is fine). */
  async write(chunk: Buffer): Promise<void> {
    this.assertOpen();
    for (let start = 0; start < chunk.length; start += SLICE) {
      this.splitter.push(chunk.length <= SLICE ? chunk : chunk.subarray(start, start + SLICE), this.onLine);
      await this.afterInput();
    }
  }

  /**
   * Feeds a whole text field, ended as if it were a file. Lone surrogates become U+FFFD first, as PostgreSQL would
   * store them, so credentials differing only there are one proxy here as in the table.
   */
  async writeText(raw: string): Promise<void> {
    this.assertOpen();
    const text = raw.toWellFormed();
    for (let start = 0; start < text.length; start += SLICE) {
      this.splitter.push(text.slice(start, start + SLICE), this.onLine);
      // A field arrives whole (up to the upload limit): a turn of the event loop per slice keeps text that
      // never fills a batch (junk, duplicates, reserved addresses) from holding every other request.
      await this.afterInput({ yieldAlways: true });
    }
    this.endPart();
  }

  /**
   * Hands a full batch to the database and, while one is being stored (or always, for a text field), lets the event
   * loop run: buffered input never leaves the microtask queue, so otherwise the database's answers (and the next
   * COPY) would wait until parsing stopped instead of overlapping with it.
   */
  private async afterInput({ yieldAlways = false } = {}): Promise<void> {
    if (this.proxies.size - this.pendingStart >= this.batchSize) await this.flush();
    if (yieldAlways || this.batches > 0) await new Promise<void>((resolve) => setImmediate(resolve));
  }

  /** Ends the current part: its last line needs no newline. */
  endPart(): void {
    this.assertOpen();
    this.splitter.end(this.onLine);
  }

  /** Lines counted so far (every part ended: all of them); 0 when each line was empty or a comment. */
  get submittedCount(): number {
    return this.counts.submittedCount;
  }

  /** Stores what is left, commits, and reports. */
  async commit(): Promise<UploadOutcome> {
    this.assertOpen();
    try {
      this.splitter.end(this.onLine);
      await this.flush();
      // No connection joins after this: one still being opened is rolled back when it arrives.
      this.releaseSpare();
      for (const lane of this.lanes) await lane.storing;
      // The second connection first: while the first (with the upload lock) is open, no other
      // upload of this user starts, so the next one sees every row of this one.
      for (const lane of [...this.lanes].reverse()) await lane.client.query("COMMIT");
    } catch (error) {
      await this.abort();
      throw error;
    }
    this.closed = true;
    for (const lane of this.lanes) releaseLane(lane);
    const started = this.options.startedAt ?? performance.now();
    return {
      proxyCount: this.accepted - this.counts.limitExceededCount,
      details: { ...this.counts, processingMs: Math.max(0, Math.round(performance.now() - started)) },
      // concat of the batches, not flat(): V8's generic flat is much slower on long id lists.
      // A batch that stored nothing (blacklisted whole) left a hole, which filter skips.
      newProxyIds: ([] as number[]).concat(...this.idsByBatch.filter((ids) => ids !== undefined)),
    };
  }

  /** Rolls back everything this upload wrote; safe to call more than once. */
  async abort(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.releaseSpare();
    // The batches in flight run to their end first: nothing is sent after ROLLBACK.
    for (const lane of this.lanes) await lane.storing?.catch(() => undefined);
    for (const lane of this.lanes) {
      try {
        await lane.client.query("ROLLBACK");
        releaseLane(lane);
      } catch {
        releaseLane(lane, true);
      }
    }
  }

  /** A second connection still being opened when the session ends is rolled back and released when it arrives. */
  private releaseSpare(): void {
    if (this.spare === null || this.spareGivenUp) return;
    this.spareGivenUp = true;
    void this.spare.then((lane) => {
      if (!lane || this.lanes.includes(lane)) return;
      lane.client.query("ROLLBACK").then(
        () => releaseLane(lane),
        () => releaseLane(lane, true),
      );
    });
  }

  /**
   * The connection for the next batch: the two in turn once the second is open. The second is asked for at the
   * second batch, only without proxy_limits (the room fills in upload order) and only when the pool has one free,
   * so uploads holding one connection each never wait for one another's second.
   */
  private nextLane(): StoreLane {
    if (this.batches === 1 && this.room === null && this.spare === null) this.spare = this.openSpare();
    const lane = this.lanes[this.batches % this.lanes.length];
    if (!lane) throw new Error("upload session has no connection");
    return lane;
  }

  private openSpare(): Promise<StoreLane | null> {
    const pool = this.options.pool;
    const max = pool.options?.max;
    if (pool.idleCount === undefined || pool.totalCount === undefined || max === undefined) return Promise.resolve(null);
    if ((pool.waitingCount ?? 0) > 0 || (pool.idleCount === 0 && pool.totalCount >= max)) return Promise.resolve(null);
    const slot = this.options.extraSlot === undefined ? undefined : this.options.extraSlot();
    if (slot === null) return Promise.resolve(null);
    return (async (): Promise<StoreLane | null> => {
      const client = await pool.connect();
      const lane: StoreLane = { client, copier: new ProxyCopier(client, this.options.userId), storing: null, ...(slot && { slot }) };
      try {
        await client.query("BEGIN");
      } catch {
        releaseLane(lane, true);
        return null;
      }
      if (this.closed || this.spareGivenUp) return lane; // releaseSpare rolls it back
      this.lanes.push(lane);
      return lane;
    })().catch(() => {
      slot?.release();
      return null;
    });
  }

  private assertOpen(): void {
    if (this.closed) throw new Error("upload session is closed");
  }

  /** Common lines are read by scanCommonLine into this (no verdict objects); the rest by classifyLine. */
  private readonly common: CommonLine = { ipNumber: 0, port: 0, username: "", password: "", scheme: null };

  private take(line: SplitLine): void {
    const counts = this.counts;
    const common = this.common;
    if (!line.overlong && scanCommonLine(line.text, common)) {
      counts.submittedCount++;
      this.takeProxy(common.ipNumber, common.port, common.username, common.password, common.scheme);
      return;
    }
    const verdict = classifyLine(line);
    if (verdict.kind === "empty") return;
    counts.submittedCount++;
    if (verdict.kind === "invalid") {
      counts[`${verdict.reason}Count`]++;
      return;
    }
    const proxy = verdict.proxy;
    this.takeProxy(proxy.ipNumber, proxy.port, proxy.username, proxy.password, proxy.scheme);
  }

  /** A parsed line. */
  private takeProxy(ipNumber: number, port: number, username: string, password: string, scheme: ProxyScheme | null): void {
    const counts = this.counts;
    counts.parsedCount++;
    if (!this.options.allowPrivateTargets && isReservedIpv4(ipNumber)) {
      counts.blacklistedCount++;
      return;
    }
    // A new proxy joins the pending batch; a repeated one only counts its line
    // (a batch refused later adds its lines seen so far to blacklistedCount).
    const seen = this.proxies.add(ipNumber, port, username, password, scheme);
    if (seen >= 0 && this.proxies.refused(seen)) counts.blacklistedCount++;
  }

  /**
   * Hands the pending batch to the database. Parsing goes on while it is
   * stored; a second full batch waits for the first (bounded memory), and a
   * failure of the first surfaces here or at commit.
   */
  private async flush(): Promise<void> {
    const start = this.pendingStart;
    const end = this.proxies.size;
    if (end === start) return;
    // Nothing may reach the connection after an abort (it goes back to the pool).
    this.assertOpen();
    this.pendingStart = end;
    // Geo lookups, columns, COPY text and ids while the previous batch is still in PostgreSQL.
    const columns = this.prepare(start, end);
    const lane = this.nextLane();
    const batch = this.batches++;
    if (this.room === null || this.room >= end - start) columns.ids = this.reserveIds(lane, end - start);
    await lane.storing;
    this.assertOpen();
    const storing = this.store(columns, lane, batch);
    storing.catch(() => undefined);
    lane.storing = storing;
  }

  /**
   * Ids for a batch, taken after the previous batch's (on its own connection
   * they queue behind its COPY), so ids follow the upload's order. Nothing is
   * sent once the session is closed.
   */
  private reserveIds(lane: StoreLane, count: number): Promise<number[]> {
    const reserved = this.lastReservation.then(() => (this.closed ? [] : lane.copier.reserveIds(count)));
    reserved.catch(() => undefined);
    this.lastReservation = reserved.catch(() => undefined);
    return reserved;
  }

  /** Proxies `start` to `end` (exclusive) with country, AS and type from the offline databases, as COPY rows. */
  private prepare(start: number, end: number): PreparedBatch {
    const { geo } = this.options;
    const proxies = this.proxies;
    const batch: PreparedBatch = { numbers: [], text: new ProxyCopyText(this.options.userId, end - start) };
    for (let n = start; n < end; n++) {
      const ip = proxies.ip(n);
      const facts = geo.lookup(ip);
      batch.numbers.push(n);
      batch.text.add({
        ip,
        port: proxies.port(n),
        username: proxies.username(n),
        password: proxies.password(n),
        schemeHint: proxies.scheme(n),
        country: facts.country,
        asn: facts.asn?.asn ?? null,
        estimatedType: facts.estimatedType,
      });
    }
    return batch;
  }

  /** The batch's identities as columns, for the blacklist and owned-proxy probes. */
  private identitiesOf(batch: PreparedBatch): Pick<ProxyInsertBatch, "ip" | "port" | "username" | "password"> {
    const proxies = this.proxies;
    return {
      ip: batch.numbers.map((n) => formatIpv4(proxies.ip(n))),
      port: batch.numbers.map((n) => proxies.port(n)),
      username: batch.numbers.map((n) => proxies.username(n)),
      password: batch.numbers.map((n) => proxies.password(n)),
    };
  }

  /**
   * The batch as insert columns, for the fallback and limited inserts (the
   * COPY path needs none, so the geo facts are looked up again here).
   */
  private columnsOf(batch: PreparedBatch): ProxyInsertBatch {
    const { geo } = this.options;
    const proxies = this.proxies;
    const facts = batch.numbers.map((n) => geo.lookup(proxies.ip(n)));
    return {
      ...this.identitiesOf(batch),
      schemeHint: batch.numbers.map((n) => proxies.scheme(n)),
      country: facts.map((f) => f.country),
      asn: facts.map((f) => f.asn?.asn ?? null),
      estimatedType: facts.map((f) => f.estimatedType),
    };
  }

  private async store(prepared: PreparedBatch, lane: StoreLane, index: number): Promise<void> {
    const client = lane.client;
    let batch = prepared;
    if (this.blacklistActive) {
      const refused = new Set(await selectBlacklisted(client, this.identitiesOf(prepared).ip));
      if (refused.size > 0) {
        for (const position of refused) {
          const n = prepared.numbers[position] ?? -1;
          this.counts.blacklistedCount += this.proxies.lines(n);
          this.proxies.refuse(n);
        }
        batch = keepPositions(prepared, (position) => !refused.has(position));
      }
    }
    const kept = batch.numbers.length;
    if (kept === 0) return;
    // An abort may have queued ROLLBACK while the blacklist probe ran: issue nothing after it.
    this.assertOpen();
    this.accepted += kept;

    if (this.room === null || this.room >= kept) {
      const missing = this.probeOwned ? await this.withoutOwned(client, batch) : batch;
      this.assertOpen();
      const ids = await lane.copier.copy(missing.text, () => this.columnsOf(missing), prepared.ids);
      this.idsByBatch[index] = ids;
      if (this.room !== null) this.room -= ids.length;
    } else {
      const { ids, fresh } = await insertProxiesWithin(client, this.options.userId, this.columnsOf(batch), this.room);
      this.idsByBatch[index] = ids;
      this.room -= ids.length;
      this.counts.limitExceededCount += fresh - ids.length;
    }
    // On the lane that stored the batch: its new rows are visible there before the commit.
    const sourceId = this.options.sourceId;
    if (sourceId !== undefined) {
      this.assertOpen();
      await linkProxiesToSource(client, this.options.userId, sourceId, this.identitiesOf(batch), this.options.seenAt ?? new Date());
    }
  }

  /** The batch without the proxies the user already has (they count as accepted, nothing to store). */
  private async withoutOwned(client: pg.PoolClient, batch: PreparedBatch): Promise<PreparedBatch> {
    const owned = new Set(await selectOwnedPositions(client, this.options.userId, this.identitiesOf(batch)));
    return owned.size === 0 ? batch : keepPositions(batch, (position) => !owned.has(position));
  }
}

/** The rows of a prepared batch whose position passes `keep`. */
function keepPositions(batch: PreparedBatch, keep: (position: number) => boolean): PreparedBatch {
  return { numbers: batch.numbers.filter((_, position) => keep(position)), text: batch.text.filter(keep) };
}

/** Where new proxies go to be checked: the check queue's producer. */
export type CheckHandOff = Pick<Producer<typeof checkQueue>, "enqueue">;

/**
 * Wakes the check scheduler after new proxies were stored (they are due at
 * once: `next_check_at` defaults to now). A failure is logged, not returned:
 * the scheduler's own tick finds them a few seconds later.
 */
export async function wakeCheckScheduler(checks: CheckHandOff, logger: Logger, userId: number, created: number, onFailure?: () => void): Promise<void> {
  if (created === 0) return;
  try {
    await checks.enqueue("check-tick", {}, { jobId: CHECK_WAKE_JOB_ID, removeOnComplete: true, removeOnFail: true });
  } catch (error) {
    logger.warn("check scheduler not woken; its next tick will find the new proxies", { userId, proxies: created, error });
    onFailure?.();
  }
}

/** After a commit: one row per key in the user's counters, so the next count reads few rows. */
export async function compactCountersAfterUpload(pool: SqlPool, logger: Logger, userId: number): Promise<void> {
  try {
    await foldUserCounters(pool, userId);
  } catch (error) {
    logger.warn("proxy counters not folded after upload", { userId, error });
  }
}

/** What a committed ingest is followed by, whoever ran it: the scheduler's wake-up and the counters' fold (neither fails it). */
export async function afterIngest(deps: Pick<IngestDeps, "pool" | "checks" | "logger" | "onHandOffFailure">, userId: number, outcome: UploadOutcome): Promise<void> {
  await Promise.all([
    wakeCheckScheduler(deps.checks, deps.logger, userId, outcome.newProxyIds.length, deps.onHandOffFailure),
    compactCountersAfterUpload(deps.pool, deps.logger, userId),
  ]);
}

/** What `ingest` needs: a database pool and a producer for the check queue. */
export interface IngestDeps {
  pool: UploadPool;
  /** Country, AS and type of new proxies (the offline databases). */
  geo: GeoDatabase;
  checks: CheckHandOff;
  logger: Logger;
  /** ALLOW_PRIVATE_NETWORK_TARGETS: reserved ranges are accepted. */
  allowPrivateTargets: boolean;
  /** Called when the check scheduler could not be woken (Redis unavailable or past its deadline), for a metric. */
  onHandOffFailure?: () => void;
}

export interface IngestOptions {
  /** Link every proxy of the input to this scrape source of the user. */
  sourceId?: number;
  /** With `sourceId`: the links' `last_seen_at`, so a scrape's own finds can be told apart; default now. */
  seenAt?: Date;
  /** Most proxies the user may hold (proxy_limits), or null for no limit. */
  maxProxies: number | null;
  /** Distinct proxies per statement; default 10000. */
  batchSize?: number;
}

/** Lines to ingest: one text, several texts, or a stream of bytes or text. */
export type IngestInput = string | Iterable<string> | AsyncIterable<Buffer | string>;

/**
 * Adds proxies to a user's list exactly as an upload does (parse, dedupe,
 * reserved and blacklisted ranges, proxy_limits, geo, one transaction) and
 * hands the new ones to checking. Returns the upload's counters.
 */
export async function ingest(deps: IngestDeps, userId: number, input: IngestInput, options: IngestOptions): Promise<UploadOutcome> {
  const session = await ProxyUploadSession.open({
    pool: deps.pool,
    geo: deps.geo,
    userId,
    allowPrivateTargets: deps.allowPrivateTargets,
    maxProxies: options.maxProxies,
    ...(options.sourceId !== undefined && { sourceId: options.sourceId }),
    ...(options.seenAt !== undefined && { seenAt: options.seenAt }),
    ...(options.batchSize !== undefined && { batchSize: options.batchSize }),
  });
  let outcome: UploadOutcome;
  try {
    if (typeof input === "string") {
      await session.writeText(input);
    } else if (Symbol.asyncIterator in input) {
      for await (const chunk of input) {
        await session.write(typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk);
      }
      session.endPart();
    } else {
      for (const text of input) await session.writeText(text);
    }
    outcome = await session.commit();
  } catch (error) {
    await session.abort();
    throw error;
  }
  await afterIngest(deps, userId, outcome);
  return outcome;
}
