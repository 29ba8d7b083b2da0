import { isIP } from "node:net";

import { countRotatorUpstreams, hashRotatorPassword, listLiveRotatorInstances, rotatorKeys, rotatorUpstreamAfter, type RotatorInstance } from "@roost/rotation";

import type { GatewayDeps } from "../../gateway.deps.js";
import { badRequest, conflict, notFound, unavailable } from "../../http/http-error.js";
import { deleteRotator, findRotator, insertRotator, listRotators, usedPortCounts, userProtocols, type RotatorRow } from "./rotating-proxies.repository.js";
import { parseRotatorCreate, type InstanceView, type NextUpstreamView, type RotatorView } from "./rotating-proxies.schema.js";

type Deps = Pick<GatewayDeps, "db" | "redis" | "config" | "logger" | "rotatorPasswordKey">;

function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1";
}

/** Moves the `next` cursor from the id read (ARGV[1], '' when unset) to ARGV[2]; 0 when another call moved it first. */
const ADVANCE_CURSOR = `if (redis.call('GET', KEYS[1]) or '') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1`;
/** A `next` call that loses the race to a concurrent one reads again, at most this often; then it answers its candidate anyway. */
const NEXT_ATTEMPTS = 8;

function authority(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

function toView(row: RotatorRow, instance: RotatorInstance | undefined, aliveCount: number): RotatorView {
  // An instance that stopped heart-beating keeps its rows; it is shown by id until it is back.
  const host = instance?.listen_host ?? "127.0.0.1";
  return {
    id: row.id,
    name: row.name,
    instance_id: row.instance_id,
    instance_name: instance?.name ?? row.instance_id,
    instance_region: instance?.region ?? "default",
    protocol: row.protocol,
    listen_protocol: row.listen_protocol,
    transport_protocol: row.transport_protocol,
    listen_transport_protocol: row.listen_transport_protocol,
    ...(row.uptime_filter_type !== null && row.uptime_percentage !== null ? { uptime_filter_type: row.uptime_filter_type, uptime_percentage: row.uptime_percentage } : {}),
    alive_proxy_count: aliveCount,
    listen_port: row.listen_port,
    auth_required: row.auth_required,
    listen_host: host,
    listen_address: authority(host, row.listen_port),
    reputation_labels: row.reputation_labels,
    created_at: row.created_at.toISOString(),
  };
}

/** Rotating proxies of one user: the rows, the live instances in Redis, and the rotators' change channel. */
export function createRotatingProxiesService(deps: Deps) {
  const pool = deps.db.pool;
  const prefix = deps.config.QUEUE_PREFIX;
  const keys = rotatorKeys(prefix);
  const logger = deps.logger.child({ component: "rotating-proxies" });

  const liveInstances = async (): Promise<Map<string, RotatorInstance>> => new Map((await listLiveRotatorInstances(deps.redis, prefix)).map((i) => [i.id, i]));
  // The hosting instance reconciles within its refresh interval anyway; this makes it seconds.
  const announce = async (userId: number, instanceId?: string): Promise<void> => {
    await deps.redis.publish(keys.changedChannel, JSON.stringify({ userId, ...(instanceId ? { instanceId } : {}) })).catch((error: unknown) => logger.warn("rotator change not published", { error }));
  };
  const views = async (userId: number, rows: RotatorRow[]): Promise<RotatorView[]> => {
    const [instances, counts] = await Promise.all([liveInstances(), countRotatorUpstreams(pool, rows.map((row) => row.id))]);
    return rows.map((row) => toView(row, instances.get(row.instance_id), counts.get(row.id) ?? 0));
  };
  const nextCursor = (rotatorId: number): string => `${prefix}:rotator-next:${rotatorId}`;

  const instances = async (): Promise<InstanceView[]> => {
    const live = [...(await liveInstances()).values()];
    const used = await usedPortCounts(pool, live.map((i) => ({ id: i.id, start: i.port_start, end: i.port_end })));
    return live
      .map((i) => {
        const total = Math.max(0, i.port_end - i.port_start + 1);
        const usedPorts = Math.min(total, used.get(i.id) ?? 0);
        return { id: i.id, name: i.name, region: i.region, port_start: i.port_start, port_end: i.port_end, used_ports: usedPorts, free_ports: total - usedPorts, total_ports: total };
      })
      .filter((i) => i.free_ports > 0)
      .sort((a, b) => a.id.localeCompare(b.id));
  };

  return {
    async list(userId: number): Promise<RotatorView[]> {
      return views(userId, await listRotators(pool, userId));
    },

    instances,

    async create(userId: number, body: unknown): Promise<RotatorView> {
      const parsed = parseRotatorCreate(body);
      if (!parsed.ok) throw badRequest(parsed.error);
      const create = parsed.value;
      const protocols = await userProtocols(pool, userId);
      if (!protocols?.[create.protocol]) throw badRequest(`protocol ${create.protocol} is not enabled in your settings`);
      const instance = (await liveInstances()).get(create.instanceId);
      if (!instance) {
        // Contract: 503 when no instance has a free port at all; an unknown id among available ones is a 400.
        if ((await instances()).length === 0) throw unavailable("No available instances with free ports");
        throw badRequest("instance_id is not an available rotator instance");
      }
      if (!create.authRequired && !deps.config.ROTATING_PROXY_ALLOW_OPEN && !isLoopback(instance.bind_host ?? instance.listen_host)) {
        throw badRequest("auth_required must be true on an instance that listens beyond loopback (ROTATING_PROXY_ALLOW_OPEN=true allows open rotators)");
      }
      const passwordHash = create.authPassword === null ? null : hashRotatorPassword(deps.rotatorPasswordKey, create.authPassword);
      const outcome = await insertRotator(pool, userId, create, passwordHash, { start: instance.port_start, end: instance.port_end });
      if (outcome.kind === "duplicate_name") throw conflict("A rotating proxy with this name already exists");
      if (outcome.kind === "no_port") throw unavailable("No available rotator ports on this instance");
      logger.info("rotating proxy created", { userId, rotatorId: outcome.row.id, instanceId: instance.id, port: outcome.row.listen_port });
      await announce(userId, instance.id);
      const [view] = await views(userId, [outcome.row]);
      if (!view) throw new Error("created rotator has no view");
      return view;
    },

    async remove(userId: number, id: number): Promise<void> {
      const deleted = await deleteRotator(pool, userId, id);
      if (!deleted) throw notFound("Rotating proxy not found");
      await deps.redis.del(nextCursor(id)).catch(() => undefined);
      logger.info("rotating proxy deleted", { userId, rotatorId: id });
      await announce(userId, deleted.instance_id);
    },

    /**
     * The next upstream of the rotation: the pool in proxy id order, as the
     * listener walks it, after the last id this endpoint handed out (kept in
     * Redis, so every gateway instance continues it; compare-and-set, so
     * concurrent calls answer distinct turns).
     */
    async next(userId: number, id: number): Promise<NextUpstreamView> {
      const rotator = await findRotator(pool, userId, id);
      if (!rotator) throw notFound("Rotating proxy not found");
      let upstream;
      for (let attempt = 1; !upstream; attempt++) {
        const last = (await deps.redis.get(nextCursor(id))) ?? "";
        const candidate = await rotatorUpstreamAfter(pool, id, Number(last) || 0);
        if (!candidate) throw conflict("No alive proxies for this rotating proxy");
        const advanced = await deps.redis.eval(ADVANCE_CURSOR, 1, nextCursor(id), last, String(candidate.proxyId));
        if (advanced === 1 || attempt === NEXT_ATTEMPTS) upstream = candidate;
      }
      return {
        proxy_id: upstream.proxyId,
        ip: upstream.ip,
        port: upstream.port,
        username: upstream.username,
        password: upstream.password,
        has_auth: upstream.username !== "" || upstream.password !== "",
        protocol: rotator.protocol,
      };
    },

    announceAccountDeleted: (userId: number): Promise<void> => announce(userId),
  };
}

export type RotatingProxiesService = ReturnType<typeof createRotatingProxiesService>;
