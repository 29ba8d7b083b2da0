import type { Redis } from "ioredis";
import type { PrismaClient } from "@roost/db";
import { deepMerge, isPlainObject, pickKnownKeys } from "./deep-merge.js";
import { defaultGlobalConfig, globalConfigSchema, type GlobalConfig } from "./global-config.schema.js";

/** Runs on every instance (the saving one included) once per change it observes; keep it synchronous and cheap. */
export type ConfigListener = (config: GlobalConfig, previous: GlobalConfig) => void;

/**
 * Runs once per committed change, only on the instance that saved it, with
 * the exact previous value read under the row lock. This is where work that
 * must happen once per change goes (enqueue a blacklist refresh, a GeoLite
 * update, clean-ups), not in onChange, which every instance runs.
 */
export type SavedListener = (change: { config: GlobalConfig; previous: GlobalConfig }) => Promise<void> | void;

export type UpdateResult =
  | { ok: true; config: GlobalConfig; previous: GlobalConfig; changed: boolean }
  | { ok: false; issues: string[] };

/**
 * Extra validation run on the merged config under the row lock, before it is
 * stored (e.g. the website blacklist). Throwing refuses the save: the
 * transaction rolls back and update() rethrows the error unchanged.
 */
export type ConfigGuard = (merged: GlobalConfig, previous: GlobalConfig) => void;

export interface StoreLogger {
  warn(message: string, meta?: object): void;
}

export interface GlobalConfigStore {
  /** The current config as this instance knows it (deeply frozen; refreshed on every broadcast). */
  current(): GlobalConfig;
  /**
   * Deep-merges `patch` into the stored config under a row lock, validates the
   * result (unknown keys and bad values fail and change nothing), runs
   * `guard`, stores it, broadcasts the change to every instance and runs the
   * onSaved listeners. Resolves once current() on this instance reflects it.
   */
  update(patch: unknown, guard?: ConfigGuard): Promise<UpdateResult>;
  /** Called on this instance after any instance changed the config. Returns an unsubscribe function. */
  onChange(listener: ConfigListener): () => void;
  /** Called on this instance after it saved a change. Returns an unsubscribe function. */
  onSaved(listener: SavedListener): () => void;
  /** Re-reads the stored config now (serialised with every other read). */
  refresh(): Promise<GlobalConfig>;
  /** Subscribes to broadcasts and loads the stored config; fails when the database cannot be read. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface GlobalConfigStoreOptions {
  prisma: PrismaClient;
  /** A connection for PUBLISH (commands). */
  redis: Redis;
  /** A dedicated connection for SUBSCRIBE (ioredis puts it in subscriber mode). */
  subscriber: Redis;
  /** Redis key prefix of the deployment, ends with `:`; instances sharing it share the config channel. */
  prefix: string;
  logger?: StoreLogger;
  /**
   * Milliseconds between safety re-reads of the stored config, which bound how
   * stale an instance can be if it missed a broadcast (Redis down while
   * another instance saved). 0 disables. @defaultValue 60000
   */
  resyncIntervalMs?: number;
}

/**
 * Parses a stored document. Keys this version no longer knows are dropped,
 * keys it added come from the defaults, and a section that no longer
 * validates falls back to its defaults alone (reported in `issues`) instead
 * of resetting the whole config.
 */
export function parseStoredConfig(raw: unknown): { config: GlobalConfig; issues: string[] } {
  const merged = deepMerge(defaultGlobalConfig, pickKnownKeys(raw, defaultGlobalConfig));
  const whole = globalConfigSchema.safeParse(merged);
  if (whole.success) return { config: whole.data, issues: [] };
  const issues = whole.error.issues.map(describeIssue);
  if (!isPlainObject(merged)) return { config: defaultGlobalConfig, issues };
  const repaired: Record<string, unknown> = { ...merged };
  const defaults: Record<string, unknown> = defaultGlobalConfig;
  for (const issue of whole.error.issues) {
    const section = issue.path[0];
    if (typeof section === "string" && Object.hasOwn(defaults, section)) repaired[section] = defaults[section];
  }
  const again = globalConfigSchema.safeParse(repaired);
  return { config: again.success ? again.data : defaultGlobalConfig, issues };
}

/** `checker.timeout_ms: Too big: expected number to be <=60000`, or `unknown key checker.foo`. */
export function describeIssue(issue: { code: string; path: PropertyKey[]; message: string; keys?: string[] }): string {
  const where = issue.path.map(String).join(".");
  if (issue.code === "unrecognized_keys" && issue.keys) {
    const keys = issue.keys.map((key) => (where ? `${where}.${key}` : key));
    return `unknown key${keys.length > 1 ? "s" : ""} ${keys.join(", ")}`;
  }
  return `${where || "config"}: ${issue.message}`;
}

/** JSON with object keys sorted, so two configs compare by content, not key order (jsonb reorders keys). */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    isPlainObject(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v,
  );
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

export function createGlobalConfigStore(options: GlobalConfigStoreOptions): GlobalConfigStore {
  const { prisma, redis, subscriber, logger } = options;
  const channel = `${options.prefix}global-config:changed`;
  const resyncIntervalMs = options.resyncIntervalMs ?? 60_000;
  const changeListeners = new Set<ConfigListener>();
  const savedListeners = new Set<SavedListener>();
  let config: GlobalConfig = deepFreeze(structuredClone(defaultGlobalConfig));
  let fingerprint = canonical(config);
  let resyncTimer: NodeJS.Timeout | undefined;
  let started = false;

  async function load(): Promise<GlobalConfig> {
    const row = await prisma.globalConfig.findUnique({ where: { id: 1 } });
    if (!row) return defaultGlobalConfig;
    const { config: parsed, issues } = parseStoredConfig(row.config);
    if (issues.length > 0) logger?.warn("stored global config partly invalid, defaults used for those sections", { issues });
    return parsed;
  }

  /** Installs `next` when it differs from what this instance has, then tells the listeners. */
  function apply(next: GlobalConfig): void {
    const nextFingerprint = canonical(next);
    if (nextFingerprint === fingerprint) return;
    const previous = config;
    config = deepFreeze(structuredClone(next));
    fingerprint = nextFingerprint;
    for (const listener of changeListeners) {
      try {
        listener(config, previous);
      } catch (error) {
        logger?.warn("global config change listener failed", { error });
      }
    }
  }

  // Reads are serialised: a read starts only after the previous one applied,
  // so the config never goes back to an older state when broadcasts and
  // saves interleave. Requests that arrive while a read is queued share it.
  let inFlight: Promise<GlobalConfig> | null = null;
  let queued: Promise<GlobalConfig> | null = null;
  function refresh(): Promise<GlobalConfig> {
    if (!inFlight) {
      inFlight = load()
        .then((next) => {
          apply(next);
          return config;
        })
        .finally(() => {
          inFlight = null;
        });
      return inFlight;
    }
    if (!queued) {
      queued = inFlight
        .catch(() => undefined)
        .then(() => {
          queued = null;
          return refresh();
        });
    }
    return queued;
  }

  const refreshInBackground = (reason: string) => {
    refresh().catch((error: unknown) => logger?.warn("global config reload failed", { reason, error }));
  };
  const onMessage = (received: string) => {
    if (received === channel) refreshInBackground("broadcast");
  };
  // After a reconnect ioredis re-subscribes, but broadcasts sent meanwhile are lost.
  const onReady = () => refreshInBackground("subscriber reconnected");

  return {
    current: () => config,

    async update(patch, guard) {
      let result: UpdateResult | undefined;
      await prisma.$transaction(async (tx) => {
        // Serialise writers: the row lock makes concurrent merges see each other.
        await tx.$executeRaw`INSERT INTO global_config (id, config) VALUES (1, ${JSON.stringify(defaultGlobalConfig)}::jsonb) ON CONFLICT (id) DO NOTHING`;
        const rows = await tx.$queryRaw<{ config: unknown }[]>`SELECT config FROM global_config WHERE id = 1 FOR UPDATE`;
        const previous = parseStoredConfig(rows[0]?.config).config;
        const parsed = globalConfigSchema.safeParse(deepMerge(previous, patch));
        if (!parsed.success) {
          result = { ok: false, issues: parsed.error.issues.map(describeIssue) };
          return;
        }
        guard?.(parsed.data, previous);
        const changed = canonical(parsed.data) !== canonical(previous);
        if (changed) await tx.globalConfig.update({ where: { id: 1 }, data: { config: parsed.data } });
        result = { ok: true, config: parsed.data, previous, changed };
      });
      if (!result) throw new Error("global config update produced no result");
      if (!result.ok || !result.changed) return result;

      await redis.publish(channel, String(Date.now())).catch((error: unknown) => {
        logger?.warn("global config broadcast failed; other instances catch up at their next resync", { error });
      });
      await refresh().catch((error: unknown) => {
        logger?.warn("global config reload after save failed", { error });
        apply(result?.ok ? result.config : config);
      });
      for (const listener of savedListeners) {
        try {
          await listener({ config: result.config, previous: result.previous });
        } catch (error) {
          logger?.warn("global config saved listener failed", { error });
        }
      }
      return result;
    },

    onChange(listener) {
      changeListeners.add(listener);
      return () => changeListeners.delete(listener);
    },

    onSaved(listener) {
      savedListeners.add(listener);
      return () => savedListeners.delete(listener);
    },

    refresh,

    async start() {
      if (started) return;
      subscriber.on("message", onMessage);
      await subscriber.subscribe(channel);
      await refresh();
      subscriber.on("ready", onReady);
      if (resyncIntervalMs > 0) {
        resyncTimer = setInterval(() => refreshInBackground("periodic resync"), resyncIntervalMs);
        resyncTimer.unref();
      }
      started = true;
    },

    async stop() {
      started = false;
      clearInterval(resyncTimer);
      subscriber.off("message", onMessage);
      subscriber.off("ready", onReady);
      await subscriber.unsubscribe(channel).catch(() => undefined);
      await inFlight?.catch(() => undefined);
      changeListeners.clear();
      savedListeners.clear();
    },
  };
}
