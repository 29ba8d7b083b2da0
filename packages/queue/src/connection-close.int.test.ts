import { once } from "node:events";
import net from "node:net";
import { createTestRedis, waitFor, type TestRedis } from "@roost/testkit";
import type { Redis } from "ioredis";
import { createConsumer, createProducer, createRedisConnection, mailQueue } from "./index.js";

/**
 * BullMQ checks the server (INFO) while each of its connections starts, and
 * its close drops the listeners of a connection still starting without
 * waiting for that check; the check then fails and surfaces as an unhandled
 * "Connection is closed." error. It failed a mailer test in CI twice: the
 * mailer was stopped while the INFO of the worker's blocking connection was
 * in flight.
 */
describe("closing BullMQ over our own connection", () => {
  let redis: TestRedis;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  beforeEach(() => {
    redis = createTestRedis();
    unhandled.length = 0;
    process.on("unhandledRejection", onUnhandled);
  });

  afterEach(async () => {
    process.off("unhandledRejection", onUnhandled);
    await redis.cleanup();
  });

  async function readyConnection(): Promise<Redis> {
    const connection = createRedisConnection(redis.url, "worker");
    if (connection.status !== "ready") await once(connection, "ready");
    return connection;
  }

  /** Resolves once the disconnected connection has ended and every promise job and timer queued by it has run. */
  async function settled(connection: Redis): Promise<void> {
    if (connection.status !== "end") await once(connection, "end");
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
  }

  it("a consumer closed while its start-up check is in flight leaves no unhandled error", async () => {
    const connection = await readyConnection();
    // Same tick: BullMQ has sent INFO and not had the answer yet.
    const consumer = createConsumer(mailQueue, { wake: async () => undefined }, { connection, prefix: redis.prefix.slice(0, -1) });
    // What a service's stop() does, here before any answer came back.
    await consumer.close();
    connection.disconnect();
    await settled(connection);
    expect(unhandled).toEqual([]);
  });

  it("a consumer closed while the start-up check of its blocking connection is in flight leaves no unhandled error", async () => {
    const relay = await startInfoDelayingRelay(redis.url, 500);
    try {
      const connection = createRedisConnection(relay.url, "worker");
      if (connection.status !== "ready") await once(connection, "ready");
      const consumer = createConsumer(mailQueue, { wake: async () => undefined }, { connection, prefix: redis.prefix.slice(0, -1) });
      // The second connection is BullMQ's duplicate for blocking reads; its start-up INFO is answered late.
      await waitFor(() => relay.delayedAnswers(1) > 0, { what: "the blocking connection's INFO held back" });
      await consumer.close();
      connection.disconnect();
      await settled(connection);
      expect(unhandled).toEqual([]);
    } finally {
      await relay.close();
    }
  });

  it("a producer closed and disconnected at once while its start-up check is in flight leaves no unhandled error", async () => {
    const connection = await readyConnection();
    const producer = createProducer(mailQueue, { connection, prefix: redis.prefix.slice(0, -1) });
    // A stop that does not wait for the close (a shutdown deadline running out) disconnects at once.
    const closing = producer.close();
    connection.disconnect();
    await closing;
    await settled(connection);
    expect(unhandled).toEqual([]);
  });
});

/**
 * A TCP relay to Redis that answers late, by `delayMs`, from the second
 * INFO a connection sends on (ioredis's ready check is its first, BullMQ's
 * start-up check its second), so a test can act while that check is in
 * flight. Connections are numbered in the order they arrive.
 */
async function startInfoDelayingRelay(redisUrl: string, delayMs: number) {
  const target = new URL(redisUrl);
  const delayed: number[] = [];
  const sockets = new Set<net.Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const server = net.createServer((client) => {
    const index = delayed.push(0) - 1;
    const upstream = net.connect(Number(target.port || 6379), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => undefined);
      socket.on("close", () => {
        client.destroy();
        upstream.destroy();
      });
    }
    let infos = 0;
    client.on("data", (chunk: Buffer) => {
      infos += chunk.toString("latin1").match(/\r\ninfo\r\n/gi)?.length ?? 0;
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (infos < 2) {
        client.write(chunk);
        return;
      }
      delayed[index] = (delayed[index] ?? 0) + 1;
      // Equal delays fire in order, so the answers keep their order.
      const timer = setTimeout(() => {
        timers.delete(timer);
        client.write(chunk);
      }, delayMs);
      timers.add(timer);
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}${target.pathname}`,
    delayedAnswers: (connection: number) => delayed[connection] ?? 0,
    async close() {
      for (const timer of timers) clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
