import type { Database } from "@roost/db";
import { createGlobalConfigStore } from "@roost/global-config";
import { OutboundGuard } from "@roost/net";
import type { Logger, Metrics } from "@roost/observability";
import { createRedisConnection } from "@roost/queue";
import {
  loadInstanceRotators,
  loadRotatorUpstreams,
  loadTlsCertificate,
  registerRotatorInstance,
  RotatorListener,
  rotatorKeys,
  rotatorsChangedSchema,
  unregisterRotatorInstance,
  type InstanceIdentity,
  type RotatorDefinition,
  type RotatorObserver,
  type TlsMaterial,
} from "@roost/rotation";
import { z } from "zod";

import type { RotatorConfig } from "./config/rotator.config.js";

export interface RotatorDeps {
  config: RotatorConfig;
  db: Database;
  redisUrl: string;
  logger: Logger;
  metrics: Metrics;
  instance: InstanceIdentity;
  /** HMAC key of rotator passwords (the gateway hashes with the same key). */
  passwordKey: string;
}

export interface RotatorService {
  start(): Promise<void>;
  /** Unregisters the instance, closes every listener and tunnel, then the Redis connections. */
  stop(): Promise<void>;
  /** Loads this instance's rotators now: opens new listeners, closes deleted ones, refreshes pools. */
  reconcile(): Promise<void>;
  readonly instanceId: string;
  /** Open listeners by rotator id (tests and health). */
  readonly listeners: ReadonlyMap<number, RotatorListener>;
}

const checkedMessageSchema = z.object({ userId: z.number().int() });
function parseJson<T>(message: string, schema: z.ZodType<T>): T | undefined {
  try {
    const parsed = schema.safeParse(JSON.parse(message));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Checked batches of one user arriving within this window refresh its pools once, in ms. */
const CHECKED_COALESCE_MS = 250;

/**
 * The rotator: hosts the listeners of the rotators assigned to this instance,
 * registers the instance with a heartbeat, and keeps each rotator's upstream
 * pool in memory (refreshed on checker batches, gateway changes and a timer).
 */
export function createRotatorService(deps: RotatorDeps): RotatorService {
  const logger = deps.logger.child({ service: "rotator" });
  const { config, instance } = deps;
  const keys = rotatorKeys(config.QUEUE_PREFIX);
  const commands = createRedisConnection(deps.redisUrl, "client");
  const configSubscriber = createRedisConnection(deps.redisUrl, "subscriber");
  const subscriber = createRedisConnection(deps.redisUrl, "subscriber");
  const globalConfig = createGlobalConfigStore({ prisma: deps.db.prisma, redis: commands, subscriber: configSubscriber, prefix: `${config.QUEUE_PREFIX}:`, logger });
  const guard = new OutboundGuard({ allowPrivateNetworkTargets: config.ALLOW_PRIVATE_NETWORK_TARGETS });
  const listeners = new Map<number, RotatorListener>();
  const timers: NodeJS.Timeout[] = [];
  let tls: Promise<TlsMaterial> | undefined;
  let reconciling: Promise<void> = Promise.resolve();
  let reconcileQueued = false;
  let stopped = false;
  const pendingUsers = new Set<number>();
  let usersTimer: NodeJS.Timeout | undefined;

  const requests = deps.metrics.counter("svc_rotating_proxy_requests_total", "Requests (plain HTTP) and tunnels (CONNECT, SOCKS) through rotators, by rotator id", ["rotator", "kind"]);
  const errors = deps.metrics.counter("svc_rotating_proxy_errors_total", "Failed upstream attempts (tried again on the next upstream where that is safe), by reason", ["reason"]);
  const connections = deps.metrics.gauge("svc_rotating_proxy_active_connections", "Open client and upstream sockets, by rotator id", ["rotator"]);
  const bytes = deps.metrics.counter("svc_rotating_proxy_bytes_total", "Bytes from clients (in) and to clients (out) through rotators, added every 10 s while a client connection is open and when it closes, by rotator id", ["rotator", "direction"]);
  const poolSize = deps.metrics.gauge("svc_rotating_proxy_pool_size", "Upstreams in a rotator's pool after its filters, by rotator id", ["rotator"]);
  const observer: RotatorObserver = {
    request: (id, kind) => requests.inc({ rotator: String(id), kind }),
    upstreamFailure: (_id, reason) => errors.inc({ reason }),
    connectionOpened: (id) => connections.inc({ rotator: String(id) }),
    connectionClosed: (id) => connections.dec({ rotator: String(id) }),
    clientBytes: (id, bytesIn, bytesOut) => {
      bytes.inc({ rotator: String(id), direction: "in" }, bytesIn);
      bytes.inc({ rotator: String(id), direction: "out" }, bytesOut);
    },
  };

  const portRange = () => {
    const global = globalConfig.current().rotating_proxies;
    return { start: config.ROTATING_PROXY_PORT_START ?? global.port_start, end: config.ROTATING_PROXY_PORT_END ?? global.port_end };
  };
  const heartbeat = async (): Promise<void> => {
    const range = portRange();
    await registerRotatorInstance(
      commands,
      config.QUEUE_PREFIX,
      { id: instance.id, name: instance.name, region: instance.region, port_start: range.start, port_end: range.end, listen_host: config.ROTATING_PROXY_PUBLIC_HOST ?? config.ROTATING_PROXY_LISTEN_HOST, bind_host: config.ROTATING_PROXY_LISTEN_HOST },
      config.ROTATOR_HEARTBEAT_SECONDS * 3000,
    );
  };
  const tlsMaterial = (): Promise<TlsMaterial> =>
    (tls ??= loadTlsCertificate({ certFile: config.ROTATOR_TLS_CERT_FILE, keyFile: config.ROTATOR_TLS_KEY_FILE, dataDir: config.DATA_DIR }).catch((error: unknown) => {
      tls = undefined;
      throw error;
    }));

  const setPool = (listener: RotatorListener, upstreams: Parameters<RotatorListener["pool"]["replace"]>[0]): void => {
    listener.pool.replace(upstreams);
    poolSize.set({ rotator: String(listener.definition.id) }, listener.pool.size);
  };

  const open = async (definition: RotatorDefinition): Promise<RotatorListener> => {
    const listener = new RotatorListener({
      definition,
      host: config.ROTATING_PROXY_LISTEN_HOST,
      guard,
      serverKey: deps.passwordKey,
      ...(definition.listenProtocol === "https" ? { tls: await tlsMaterial() } : {}),
      upstreamTimeoutMs: config.ROTATOR_UPSTREAM_TIMEOUT_MS,
      responseTimeoutMs: config.ROTATOR_RESPONSE_TIMEOUT_MS,
      tunnelIdleTimeoutMs: config.ROTATOR_TUNNEL_IDLE_TIMEOUT_MS,
      maxAttempts: config.ROTATOR_MAX_UPSTREAM_ATTEMPTS,
      observer,
    });
    await listener.start();
    return listener;
  };

  const close = async (id: number, listener: RotatorListener): Promise<void> => {
    listeners.delete(id);
    await listener.stop();
    poolSize.remove({ rotator: String(id) });
    logger.info("rotator listener closed", { rotatorId: id, port: listener.definition.listenPort });
  };

  const reconcileOnce = async (): Promise<void> => {
    const definitions = await loadInstanceRotators(deps.db.pool, instance.id);
    const wanted = new Map(definitions.map((definition) => [definition.id, definition]));
    for (const [id, listener] of [...listeners]) {
      const definition = wanted.get(id);
      if (!definition || JSON.stringify(definition) !== JSON.stringify(listener.definition)) await close(id, listener);
    }
    const pools = await loadRotatorUpstreams(deps.db.pool, definitions.map((definition) => definition.id));
    for (const definition of definitions) {
      if (stopped) return;
      const existing = listeners.get(definition.id);
      if (existing) {
        setPool(existing, pools.get(definition.id) ?? []);
        continue;
      }
      try {
        const listener = await open(definition);
        if (stopped) return void (await listener.stop());
        listeners.set(definition.id, listener);
        setPool(listener, pools.get(definition.id) ?? []);
        logger.info("rotator listener opened", { rotatorId: definition.id, port: definition.listenPort, listenProtocol: definition.listenProtocol });
      } catch (error) {
        // Tried again on the next reconcile (a port still held by a closing socket, a certificate error).
        logger.warn("rotator listener not opened", { rotatorId: definition.id, port: definition.listenPort, error });
      }
    }
  };

  /** Serialised; a request while one runs queues exactly one more. */
  const reconcile = (): Promise<void> => {
    if (reconcileQueued) return reconciling;
    reconcileQueued = true;
    reconciling = reconciling
      .catch(() => undefined)
      .then(async () => {
        reconcileQueued = false;
        if (!stopped) await reconcileOnce();
      });
    return reconciling;
  };
  const reconcileLogged = (): void =>
    void reconcile().catch((error: unknown) => logger.warn("rotators not reconciled", { error }));

  const refreshUsers = async (): Promise<void> => {
    usersTimer = undefined;
    const users = new Set(pendingUsers);
    pendingUsers.clear();
    const affected = [...listeners.values()].filter((listener) => users.has(listener.definition.userId));
    if (affected.length === 0) return;
    const pools = await loadRotatorUpstreams(deps.db.pool, affected.map((listener) => listener.definition.id));
    for (const listener of affected) if (listeners.get(listener.definition.id) === listener) setPool(listener, pools.get(listener.definition.id) ?? []);
  };

  const onMessage = (channel: string, message: string): void => {
    if (stopped) return;
    if (channel === keys.changedChannel) {
      // Another instance's rotator changed: nothing here to open or close.
      const changed = parseJson(message, rotatorsChangedSchema);
      if (changed?.instanceId !== undefined && changed.instanceId !== instance.id) return;
      return reconcileLogged();
    }
    if (channel !== keys.checkedChannel) return;
    const checked = parseJson(message, checkedMessageSchema);
    if (!checked) return;
    pendingUsers.add(checked.userId);
    usersTimer ??= setTimeout(() => void refreshUsers().catch((error: unknown) => logger.warn("rotator pools not refreshed", { error })), CHECKED_COALESCE_MS);
  };

  return {
    instanceId: instance.id,
    listeners,
    reconcile,
    async start() {
      await globalConfig.start();
      subscriber.on("message", onMessage);
      await subscriber.subscribe(keys.changedChannel, keys.checkedChannel);
      await heartbeat();
      await reconcile();
      const beat = setInterval(() => void heartbeat().catch((error: unknown) => logger.warn("rotator instance not registered", { error })), config.ROTATOR_HEARTBEAT_SECONDS * 1000);
      const refresh = setInterval(reconcileLogged, config.ROTATOR_REFRESH_SECONDS * 1000);
      beat.unref();
      refresh.unref();
      timers.push(beat, refresh);
      logger.info("rotator started", { instanceId: instance.id, listeners: listeners.size });
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      for (const timer of timers) clearInterval(timer);
      if (usersTimer) clearTimeout(usersTimer);
      const steps: Promise<unknown>[] = [
        unregisterRotatorInstance(commands, config.QUEUE_PREFIX, instance.id),
        reconciling.catch(() => undefined).then(() => Promise.all([...listeners].map(([id, listener]) => close(id, listener)))),
      ];
      const results = await Promise.allSettled(steps);
      await Promise.allSettled([globalConfig.stop(), subscriber.quit(), configSubscriber.quit()]);
      await commands.quit().catch(() => undefined);
      for (const result of results) if (result.status === "rejected") logger.warn("rotator stop step failed", { error: result.reason });
    },
  };
}
