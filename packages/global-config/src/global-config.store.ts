import type { Redis } from "ioredis";
import type { PrismaClient } from "@roost/db";
import { deepMerge } from "./deep-merge.js";
import { defaultGlobalConfig, globalConfigSchema, type GlobalConfig } from "./global-config.schema.js";

export type ConfigListener = (config: GlobalConfig, previous: GlobalConfig) => void;

export type UpdateResult =
  | { ok: true; config: GlobalConfig; previous: GlobalConfig }
  | { ok: false; issues: string[] };

/** Extra validation run on the merged config before it is stored (e.g. the website blacklist). */
export type ConfigGuard = (merged: GlobalConfig, previous: GlobalConfig) => void;

export interface GlobalConfigStore {
  /** The current config as this instance knows it (refreshed on every broadcast). */
  current(): GlobalConfig;
  /**
   * Deep-merges `patch` into the stored config under a row lock, validates the
   * result (unknown keys and bad values fail), runs `guard` (which may throw to
   * refuse), stores it and broadcasts the change to every instance.
   */
  update(patch: unknown, guard?: ConfigGuard): Promise<UpdateResult>;
  /** Called on this instance after any instance changed the config. */
  onChange(listener: ConfigListener): () => void;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface GlobalConfigStoreOptions {
  prisma: PrismaClient;
  /** A connection for PUBLISH (commands). */
  redis: Redis;
  /** A dedicated connection for SUBSCRIBE (ioredis puts it in subscriber mode). */
  subscriber: Redis;
  prefix: string;
}

function parseStored(raw: unknown): GlobalConfig {
  // Stored documents written by older versions may lack newer keys: defaults fill them.
  const merged = deepMerge(defaultGlobalConfig, raw);
  const parsed = globalConfigSchema.safeParse(merged);
  return parsed.success ? parsed.data : defaultGlobalConfig;
}

export function createGlobalConfigStore(options: GlobalConfigStoreOptions): GlobalConfigStore {
  const { prisma, redis, subscriber } = options;
  const channel = `${options.prefix}global-config:changed`;
  const listeners = new Set<ConfigListener>();
  let config: GlobalConfig = defaultGlobalConfig;

  async function load(): Promise<GlobalConfig> {
    const row = await prisma.globalConfig.findUnique({ where: { id: 1 } });
    return row ? parseStored(row.config) : defaultGlobalConfig;
  }

  function apply(next: GlobalConfig) {
    const previous = config;
    config = next;
    for (const listener of listeners) listener(next, previous);
  }

  const onMessage = (received: string) => {
    if (received !== channel) return;
    load()
      .then(apply)
      .catch(() => undefined);
  };

  return {
    current: () => config,

    async update(patch, guard) {
      let result: UpdateResult | undefined;
      await prisma.$transaction(async (tx) => {
        // Serialise writers: the row lock makes concurrent merges see each other.
        await tx.globalConfig.upsert({
          where: { id: 1 },
          create: { id: 1, config: defaultGlobalConfig },
          update: {},
        });
        const rows = await tx.$queryRaw<{ config: unknown }[]>`SELECT config FROM global_config WHERE id = 1 FOR UPDATE`;
        const previous = parseStored(rows[0]?.config);
        const parsed = globalConfigSchema.safeParse(deepMerge(previous, patch));
        if (!parsed.success) {
          result = {
            ok: false,
            issues: parsed.error.issues.map((issue) => {
              const where = issue.path.join(".");
              return issue.code === "unrecognized_keys"
                ? `unknown key${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => (where ? `${where}.${k}` : k)).join(", ")}`
                : `${where || "config"}: ${issue.message}`;
            }),
          };
          return;
        }
        guard?.(parsed.data, previous);
        await tx.globalConfig.update({ where: { id: 1 }, data: { config: parsed.data } });
        result = { ok: true, config: parsed.data, previous };
      });
      if (!result) throw new Error("global config update produced no result");
      if (result.ok) {
        apply(result.config);
        await redis.publish(channel, String(Date.now())).catch(() => undefined);
      }
      return result;
    },

    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    async start() {
      subscriber.on("message", onMessage);
      await subscriber.subscribe(channel);
      config = await load();
    },

    async stop() {
      subscriber.off("message", onMessage);
      await subscriber.unsubscribe(channel).catch(() => undefined);
      listeners.clear();
    },
  };
}
