import { performance } from "node:perf_hooks";
import type pg from "pg";
import type { GeoDatabase } from "@roost/geo";
import { classifyLine, isReservedIpv4, LineSplitter, type ParsedProxy, type SplitLine } from "@roost/net";
import type { Logger } from "@roost/observability";
import type { GatewayQueues } from "../../gateway.deps.js";
import { countUserProxies, foldUserCounters, type SqlPool } from "./proxy.repository.js";
import {
  blacklistHasRanges,
  copyNewProxies,
  insertProxiesWithin,
  lockUserUploads,
  selectBlacklisted,
  selectOwnedPositions,
  userHasProxies,
  type ProxyInsertBatch,
} from "./proxy-upload.repository.js";

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
  pool: Pick<pg.Pool, "connect" | "query">;
  geo: GeoDatabase;
  userId: number;
  /** ALLOW_PRIVATE_NETWORK_TARGETS: reserved ranges are accepted. */
  allowPrivateTargets: boolean;
  /** Most proxies the user may hold (proxy_limits), or null for no limit. */
  maxProxies: number | null;
  /** Distinct proxies per INSERT statement; default 10000. */
  batchSize?: number;
  /** performance.now() when the request arrived; processingMs counts from it. */
  startedAt?: number;
}

/** Characters of a text field fed to the splitter at once (keeps batches bounded). */
const TEXT_SLICE = 64 * 1024;
/** Seen-proxy sets are sharded: one JS Set holds at most 2^24 entries. */
const SHARDS = 16;

type IdentityKey = number | string;

/** Proxies without credentials key by a number (ip * 65536 + port, exact below 2^48); others by a string. */
function identityKey(proxy: ParsedProxy): IdentityKey {
  return proxy.username === "" && proxy.password === ""
    ? proxy.ipNumber * 65536 + proxy.port
    : `${proxy.ipNumber}:${proxy.port}:${proxy.username}\u0000${proxy.password}`;
}

/**
 * One upload: lines are split, classified and counted as they stream in;
 * distinct new proxies are inserted in batches inside one transaction, so an
 * upload that turns out too large (413) or fails rolls back whole and stores
 * nothing. Memory is bounded by the batch plus one set entry per distinct
 * proxy of the upload (exact de-duplication for `proxyCount`).
 *
 * Counting (docs/proxies.md): every non-empty line once in `submittedCount`
 * and once in parsed or one invalid counter; `blacklistedCount` counts
 * parsed lines refused for a reserved or blacklisted range (duplicates of
 * such a line count again).
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
  private readonly seen: Set<IdentityKey>[] = Array.from({ length: SHARDS }, () => new Set<IdentityKey>());
  private readonly refused = new Set<IdentityKey>();
  private pending: ParsedProxy[] = [];
  private pendingIndex = new Map<IdentityKey, number>();
  private pendingLines: number[] = [];
  private readonly newIds: number[] = [];
  private accepted = 0;
  private room: number | null;
  /** The batch being stored while the next one is parsed (at most one). */
  private storing: Promise<void> | null = null;
  /** Positions and line counts of that batch: duplicates seen meanwhile still count if it is refused. */
  private storingIndex = new Map<IdentityKey, number>();
  private storingLines: number[] = [];
  private closed = false;
  private readonly batchSize: number;
  private readonly onLine = (line: SplitLine): void => this.take(line);

  private constructor(
    private readonly options: UploadSessionOptions,
    private readonly client: pg.PoolClient,
    private readonly blacklistActive: boolean,
    /** False when the user's list was empty at the start: nothing to look up (the lock keeps it so). */
    private readonly probeOwned: boolean,
    room: number | null,
  ) {
    this.room = room;
    this.batchSize = options.batchSize ?? 10_000;
  }

  /** Opens the transaction and takes the user's upload lock. */
  static async open(options: UploadSessionOptions): Promise<ProxyUploadSession> {
    const client = await options.pool.connect();
    try {
      await client.query("BEGIN");
      await lockUserUploads(client, options.userId);
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
    this.splitter.push(chunk, this.onLine);
    await this.afterInput();
  }

  /** Feeds a whole text field, ended as if it were a file. */
  async writeText(text: string): Promise<void> {
    this.assertOpen();
    for (let start = 0; start < text.length; start += TEXT_SLICE) {
      this.splitter.push(text.slice(start, start + TEXT_SLICE), this.onLine);
      await this.afterInput();
    }
    this.endPart();
  }

  /**
   * Hands a full batch to the database, and while one is being stored lets
   * the event loop run: input that is already buffered arrives without ever
   * leaving the microtask queue, so without this the database's answers
   * (and the next COPY) would wait until parsing stopped, and parsing and
   * storing would take turns instead of overlapping.
   */
  private async afterInput(): Promise<void> {
    if (this.pending.length >= this.batchSize) await this.flush();
    if (this.storing) await new Promise<void>((resolve) => setImmediate(resolve));
  }

  /** Ends the current part: its last line needs no newline. */
  endPart(): void {
    this.assertOpen();
    this.splitter.end(this.onLine);
  }

  /** Stores what is left, commits, and reports. */
  async commit(): Promise<UploadOutcome> {
    this.assertOpen();
    try {
      this.splitter.end(this.onLine);
      await this.flush();
      await this.storing;
      await this.client.query("COMMIT");
    } catch (error) {
      await this.abort();
      throw error;
    }
    this.closed = true;
    this.client.release();
    const started = this.options.startedAt ?? performance.now();
    return {
      proxyCount: this.accepted - this.counts.limitExceededCount,
      details: { ...this.counts, processingMs: Math.max(0, Math.round(performance.now() - started)) },
      newProxyIds: this.newIds,
    };
  }

  /** Rolls back everything this upload wrote; safe to call more than once. */
  async abort(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // The batch in flight runs to its end first: nothing is sent after ROLLBACK.
    await this.storing?.catch(() => undefined);
    try {
      await this.client.query("ROLLBACK");
      this.client.release();
    } catch {
      this.client.release(true);
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new Error("upload session is closed");
  }

  private take(line: SplitLine): void {
    const verdict = classifyLine(line);
    if (verdict.kind === "empty") return;
    const counts = this.counts;
    counts.submittedCount++;
    if (verdict.kind === "invalid") {
      counts[`${verdict.reason}Count`]++;
      return;
    }
    counts.parsedCount++;
    const proxy = verdict.proxy;
    if (!this.options.allowPrivateTargets && isReservedIpv4(proxy.ipNumber)) {
      counts.blacklistedCount++;
      return;
    }
    const key = identityKey(proxy);
    const shard = this.seen[proxy.port % SHARDS] ?? this.seen[0];
    if (shard?.has(key)) {
      if (this.refused.has(key)) {
        counts.blacklistedCount++;
        return;
      }
      const index = this.pendingIndex.get(key);
      if (index !== undefined) {
        this.pendingLines[index] = (this.pendingLines[index] ?? 1) + 1;
        return;
      }
      const inFlight = this.storingIndex.get(key);
      if (inFlight !== undefined) this.storingLines[inFlight] = (this.storingLines[inFlight] ?? 1) + 1;
      return;
    }
    shard?.add(key);
    this.pendingIndex.set(key, this.pending.length);
    this.pending.push(proxy);
    this.pendingLines.push(1);
  }

  /**
   * Hands the pending batch to the database. Parsing goes on while it is
   * stored; a second full batch waits for the first (bounded memory), and a
   * failure of the first surfaces here or at commit.
   */
  private async flush(): Promise<void> {
    const batch = this.pending;
    const lines = this.pendingLines;
    const index = this.pendingIndex;
    if (batch.length === 0) return;
    this.pending = [];
    this.pendingLines = [];
    this.pendingIndex = new Map();
    // Geo lookups and columns while the previous batch is still in PostgreSQL.
    const columns = this.prepare(batch);
    await this.storing;
    this.assertOpen();
    this.storingIndex = index;
    this.storingLines = lines;
    const storing = this.store(batch, lines, columns);
    storing.catch(() => undefined);
    this.storing = storing;
  }

  /** The batch as insert columns, with country, AS and type from the offline databases. */
  private prepare(batch: ParsedProxy[]): ProxyInsertBatch {
    const { geo } = this.options;
    const columns: ProxyInsertBatch = { ip: [], port: [], username: [], password: [], schemeHint: [], country: [], asn: [], estimatedType: [] };
    for (const proxy of batch) {
      const facts = geo.lookup(proxy.ipNumber);
      columns.ip.push(proxy.ip);
      columns.port.push(proxy.port);
      columns.username.push(proxy.username);
      columns.password.push(proxy.password);
      columns.schemeHint.push(proxy.scheme);
      columns.country.push(facts.country);
      columns.asn.push(facts.asn?.asn ?? null);
      columns.estimatedType.push(facts.estimatedType);
    }
    return columns;
  }

  private async store(batch: ParsedProxy[], lines: number[], prepared: ProxyInsertBatch): Promise<void> {
    let columns = prepared;
    if (this.blacklistActive) {
      const refused = new Set(await selectBlacklisted(this.client, prepared.ip));
      if (refused.size > 0) {
        for (const position of refused) {
          const proxy = batch[position];
          this.counts.blacklistedCount += lines[position] ?? 1;
          if (proxy) this.refused.add(identityKey(proxy));
        }
        columns = keepPositions(prepared, (position) => !refused.has(position));
      }
    }
    const kept = columns.ip.length;
    if (kept === 0) return;
    // An abort may have queued ROLLBACK while the blacklist probe ran: issue nothing after it.
    this.assertOpen();
    this.accepted += kept;

    if (this.room === null || this.room >= kept) {
      const missing = this.probeOwned ? await this.withoutOwned(columns) : columns;
      this.assertOpen();
      const ids = await copyNewProxies(this.client, this.options.userId, missing);
      for (const id of ids) this.newIds.push(id);
      if (this.room !== null) this.room -= ids.length;
      return;
    }
    const { ids, fresh } = await insertProxiesWithin(this.client, this.options.userId, columns, this.room);
    for (const id of ids) this.newIds.push(id);
    this.room -= ids.length;
    this.counts.limitExceededCount += fresh - ids.length;
  }

  /** The batch without the proxies the user already has (they count as accepted, nothing to store). */
  private async withoutOwned(columns: ProxyInsertBatch): Promise<ProxyInsertBatch> {
    const owned = new Set(await selectOwnedPositions(this.client, this.options.userId, columns));
    return owned.size === 0 ? columns : keepPositions(columns, (position) => !owned.has(position));
  }
}

/** The rows of a column batch whose position passes `keep`. */
function keepPositions(columns: ProxyInsertBatch, keep: (position: number) => boolean): ProxyInsertBatch {
  const pick = <T>(values: T[]): T[] => values.filter((_, position) => keep(position));
  return {
    ip: pick(columns.ip),
    port: pick(columns.port),
    username: pick(columns.username),
    password: pick(columns.password),
    schemeHint: pick(columns.schemeHint),
    country: pick(columns.country),
    asn: pick(columns.asn),
    estimatedType: pick(columns.estimatedType),
  };
}

/** Largest `check-batch` payload the queue contract allows. */
export const CHECK_BATCH_SIZE = 5000;

/**
 * Hands new proxies to the checker right away (check-batch jobs of up to
 * 5000 ids). A failure is logged, not returned: the rows are stored with
 * next_check_at = now, so the scheduler picks them up on its next tick.
 */
export async function enqueueFirstChecks(queues: Pick<GatewayQueues, "check">, logger: Logger, userId: number, ids: number[]): Promise<void> {
  const batches: number[][] = [];
  for (let start = 0; start < ids.length; start += CHECK_BATCH_SIZE) batches.push(ids.slice(start, start + CHECK_BATCH_SIZE));
  try {
    for (let start = 0; start < batches.length; start += 16) {
      await Promise.all(batches.slice(start, start + 16).map((proxyIds) => queues.check.enqueue("check-batch", { userId, proxyIds })));
    }
  } catch (error) {
    logger.warn("first checks not queued; the scheduler will pick the proxies up", { userId, proxies: ids.length, error });
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
