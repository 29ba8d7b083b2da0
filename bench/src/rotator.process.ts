import { createDatabase } from "@roost/db";
import { createLogger, createMetrics } from "@roost/observability";
import { createRotatorService, rotatorConfigFromEnv, type RotatorService } from "@roost/service-rotator";

/**
 * The rotator service as its own process, built as services/rotator/src/main.ts
 * builds it (default metrics, a 4-connection pool, createRotatorService), on the
 * bench's database and a Redis prefix of its own. Forked detached by the bench;
 * exits when the bench's IPC channel closes.
 */
export interface RotatorStart {
  databaseUrl: string;
  redisUrl: string;
  /** The rotator's variables (QUEUE_PREFIX, DATA_DIR, ROTATOR_INSTANCE_ID, port range, ...). */
  env: Record<string, string>;
  passwordKey: string;
}

export type RotatorRequest = { kind: "start"; start: RotatorStart } | { kind: "usage" } | { kind: "stop" };
export type RotatorMessage =
  | { kind: "ready"; listeners: number[] }
  | { kind: "usage"; cpuUs: number; heapUsed: number; external: number; openSockets: number }
  | { kind: "stopped" }
  | { kind: "failed"; message: string };

const send = (message: RotatorMessage): void => {
  process.send?.(message);
};
let service: RotatorService | undefined;
let closeDatabase: (() => Promise<void>) | undefined;

async function start(data: RotatorStart): Promise<number[]> {
  const logger = createLogger({ level: "warn" });
  const metrics = createMetrics();
  const db = createDatabase({ databaseUrl: data.databaseUrl, applicationName: "roost-bench-rotator", maxConnections: 4 });
  closeDatabase = () => db.close();
  const config = rotatorConfigFromEnv(data.env);
  service = createRotatorService({ config, db, redisUrl: data.redisUrl, logger, metrics, instance: { id: config.ROTATOR_INSTANCE_ID ?? "bench", name: "bench", region: "default" }, passwordKey: data.passwordKey });
  await service.start();
  return [...service.listeners.values()].map((listener) => listener.port);
}

process.once("disconnect", () => process.exit(0));

process.on("message", (request: RotatorRequest) => {
  const fail = (error: unknown): void => send({ kind: "failed", message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  if (request.kind === "start") return void start(request.start).then((listeners) => send({ kind: "ready", listeners }), fail);
  if (request.kind === "usage") {
    const cpu = process.cpuUsage();
    const memory = process.memoryUsage();
    const openSockets = [...(service?.listeners.values() ?? [])].reduce((sum, listener) => sum + listener.openSockets, 0);
    return send({ kind: "usage", cpuUs: cpu.user + cpu.system, heapUsed: memory.heapUsed, external: memory.external, openSockets });
  }
  void (async () => {
    await service?.stop();
    await closeDatabase?.();
    send({ kind: "stopped" });
  })().catch(fail);
});
