import { once } from "node:events";
import { createTestRedis, type TestRedis } from "@roost/testkit";
import type { Redis } from "ioredis";
import { createConsumer, createProducer, createRedisConnection, mailQueue } from "./index.js";

/**
 * BullMQ checks the server (INFO) while it starts on a connection it was
 * given. A service stopped during that check closes BullMQ and then
 * disconnects its own connection, which fails the check after BullMQ has
 * dropped its listeners. That used to surface as an unhandled "Connection is
 * closed." error (it failed a mailer test in CI).
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
    const closing = consumer.close();
    connection.disconnect();
    await closing;
    await settled(connection);
    expect(unhandled).toEqual([]);
  });

  it("a producer closed while its start-up check is in flight leaves no unhandled error", async () => {
    const connection = await readyConnection();
    const producer = createProducer(mailQueue, { connection, prefix: redis.prefix.slice(0, -1) });
    const closing = producer.close();
    connection.disconnect();
    await closing;
    await settled(connection);
    expect(unhandled).toEqual([]);
  });
});
