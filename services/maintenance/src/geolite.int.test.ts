import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createDatabase, type Database } from "@roost/db";
import { createGeoLiteReloader, createStoredGeoResolver, openGeoDatabase, type GeoLiteReloader, type GeoResolver } from "@roost/geo";
import { createGlobalConfigStore, geoLiteUpdateWanted, type GlobalConfigStore } from "@roost/global-config";
import { OutboundGuard } from "@roost/net";
import { createLogger } from "@roost/observability";
import { createProducer, createRedisConnection, maintenanceQueue } from "@roost/queue";
import { createTestDatabase, createTestRedis, mmdbWriterAvailable, waitFor, writeTestMmdb, type TestDatabase, type TestRedis } from "@roost/testkit";
import { createMaintenanceService } from "./index.js";
import { sha256Hex } from "./jobs/geolite/geolite-archive.js";
import { rederiveProxyGeo } from "./jobs/geolite/geolite-rederive.job.js";
import { updateGeoLite } from "./jobs/geolite/geolite-update.job.js";
import { buildMaxMindArchive } from "./jobs/geolite/geolite.test-support.js";

const KEY = "test-licence-key-5e1f";
const COUNTRY = "GeoLite2-Country";
const ASN = "GeoLite2-ASN";

type Edition = typeof COUNTRY | typeof ASN;

type TestNetworks = Record<string, { country: string; asn: number; org: string }>;

/** Public addresses the reserved-range mask leaves alone; 9.9.9.9 is in no test record. */
const TEST_NETWORKS: TestNetworks = {
  "8.8.8.0/24": { country: "SE", asn: 64500, org: "CELLCO-PART" }, // GeoLite-style name → mobile
  "1.1.1.0/24": { country: "JP", asn: 64501, org: "TWC-11427-SOCAL" }, // → residential
};

async function buildArchives(networks: TestNetworks): Promise<Record<Edition, Buffer>> {
  const entries = Object.entries(networks);
  const country = writeTestMmdb(COUNTRY, entries.map(([network, v]) => ({ network, data: { country: { iso_code: v.country } } })));
  const asn = writeTestMmdb(
    ASN,
    entries.map(([network, v]) => ({ network, data: { autonomous_system_number: v.asn, autonomous_system_organization: v.org } })),
  );
  return { [COUNTRY]: await buildMaxMindArchive(COUNTRY, country), [ASN]: await buildMaxMindArchive(ASN, asn) };
}

/** Serves archives the way download.maxmind.com does: `/app/geoip_download?edition_id&license_key&suffix`. */
class FakeMaxMind {
  readonly served = new Map<string, { archive: Buffer; sha256: string }>();
  /** When set, every request is answered with a 302 to it. */
  redirectTo: string | null = null;
  readonly requests: string[] = [];
  readonly server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://localhost");
    this.requests.push(url.search);
    if (this.redirectTo) {
      response.writeHead(302, { location: this.redirectTo }).end();
      return;
    }
    const served = this.served.get(url.searchParams.get("edition_id") ?? "");
    if (url.pathname !== "/app/geoip_download" || !served) return void response.writeHead(404).end("not found");
    if (url.searchParams.get("license_key") !== KEY) return void response.writeHead(401).end("Invalid license key");
    const suffix = url.searchParams.get("suffix");
    if (suffix === "tar.gz") return void response.writeHead(200, { "content-type": "application/gzip" }).end(served.archive);
    if (suffix === "tar.gz.sha256") return void response.writeHead(200).end(`${served.sha256}  ${url.searchParams.get("edition_id")}_20261120.tar.gz\n`);
    response.writeHead(400).end("bad suffix");
  });

  serve(archives: Record<Edition, Buffer>, sha256 = (archive: Buffer) => sha256Hex(archive)): void {
    for (const edition of [COUNTRY, ASN] as const) this.served.set(edition, { archive: archives[edition], sha256: sha256(archives[edition]) });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
}

const writerReady = mmdbWriterAvailable();
const describeWithWriter = writerReady ? describe : describe.skip;

describeWithWriter("GeoLite update (local MaxMind-layout server, real PostgreSQL and Redis)", () => {
  let database: TestDatabase;
  let db: Database;
  let redis: TestRedis;
  let maxmind: FakeMaxMind;
  let baseUrl: string;
  let archives: Record<Edition, Buffer>;
  // The guard stays on; only the fake server's own address is let through.
  const guard = new OutboundGuard({ allowAddress: (a) => a.address === "127.0.0.1" });
  const logger = createLogger({ silent: true });

  beforeAll(async () => {
    archives = await buildArchives(TEST_NETWORKS);
  });
  beforeEach(async () => {
    database = await createTestDatabase();
    db = createDatabase({ databaseUrl: database.url });
    redis = createTestRedis();
    maxmind = new FakeMaxMind();
    baseUrl = await maxmind.listen();
    maxmind.serve(archives);
    // Proxies as an upload stores them today: from the shipped offline databases.
    const offline = await openGeoDatabase();
    const user = await db.prisma.user.create({ data: { email: "geo@example.com", passwordHash: "x" } });
    for (const ip of ["8.8.8.8", "1.1.1.1", "9.9.9.9"]) {
      const facts = offline.lookup(ip);
      await db.pool.query("INSERT INTO proxies (user_id, ip, port, country, asn, estimated_type) VALUES ($1, $2, 8080, $3, $4, $5)", [
        user.id,
        ip,
        facts.country,
        facts.asn?.asn ?? null,
        facts.estimatedType,
      ]);
    }
  });
  afterEach(async () => {
    await new Promise((resolve) => maxmind.server.close(resolve));
    await redis.cleanup();
    await db.close();
    await database.drop();
  });

  const proxyGeo = async () =>
    (await db.pool.query<{ ip: string; country: string; asn: number | null; estimated_type: string }>(
      "SELECT ip, country, asn, estimated_type FROM proxies ORDER BY ip",
    )).rows;
  const derived = [
    { ip: "1.1.1.1", country: "JP", asn: 64501, estimated_type: "residential" },
    { ip: "8.8.8.8", country: "SE", asn: 64500, estimated_type: "mobile" },
    { ip: "9.9.9.9", country: "N/A", asn: null, estimated_type: "unknown" },
  ];

  let offlineRows: Awaited<ReturnType<typeof proxyGeo>>;
  beforeEach(async () => {
    offlineRows = await proxyGeo();
  });

  it("setting the key downloads through the queue, stores in PostgreSQL, reloads every instance and re-derives proxies", async () => {
    const prefix = redis.prefix.slice(0, -1);
    const service = createMaintenanceService({
      config: { QUEUE_PREFIX: prefix, MAINTENANCE_CONCURRENCY: 1, ALLOW_PRIVATE_NETWORK_TARGETS: false },
      db,
      redisUrl: redis.url,
      logger,
      guard,
    });
    const commands = createRedisConnection(redis.url, "client");
    const producerConnection = createRedisConnection(redis.url, "producer");
    const subscribers = [0, 1, 2].map(() => createRedisConnection(redis.url, "worker"));
    const [configSubscriber, ...instanceSubscribers] = subscribers;
    const producer = createProducer(maintenanceQueue, { connection: producerConnection, prefix });
    const store: GlobalConfigStore = createGlobalConfigStore({ prisma: db.prisma, redis: commands, subscriber: configSubscriber!, prefix: redis.prefix });
    // The same hook the gateway registers (gateway.wiring.ts).
    store.onSaved(async ({ config, previous }) => {
      if (geoLiteUpdateWanted(config, previous)) await producer.enqueue("geolite-update", { force: true });
    });
    // Two instances, each with its resolver subscribed to the channel.
    const resolvers: GeoResolver[] = instanceSubscribers.map(() => createStoredGeoResolver(db.pool));
    const reloaders: GeoLiteReloader[] = instanceSubscribers.map((subscriber, i) =>
      createGeoLiteReloader({ resolver: resolvers[i]!, subscriber, prefix: redis.prefix, logger }),
    );
    try {
      await service.start();
      await store.start();
      for (const reloader of reloaders) await reloader.start();
      await waitFor(() => producerConnection.status === "ready", { what: "producer connection" });
      for (const resolver of resolvers) expect((await resolver.get()).lookupCountry("8.8.8.8")).toBe("US");

      const saved = await store.update({ geolite: { api_key: KEY, download_base_url: baseUrl } });
      expect(saved.ok).toBe(true);

      for (const resolver of resolvers) {
        await waitFor(async () => (await resolver.get()).lookupCountry("8.8.8.8") === "SE", { timeoutMs: 30_000, what: "resolver reload" });
        const geo = await resolver.get();
        expect(geo.lookup("1.1.1.1")).toEqual({ country: "JP", asn: { asn: 64501, org: "TWC-11427-SOCAL" }, estimatedType: "residential" });
        expect(geo.lookup("8.8.8.8").estimatedType).toBe("mobile");
        expect(geo.lookup("10.1.2.3")).toEqual({ country: "N/A", asn: null, estimatedType: "unknown" });
      }
      await waitFor(async () => JSON.stringify(await proxyGeo()) === JSON.stringify(derived), { timeoutMs: 30_000, what: "proxies re-derived" });

      const stored = await db.pool.query<{ edition: string; sha256: string }>("SELECT edition, sha256 FROM geolite_databases ORDER BY edition");
      expect(stored.rows).toEqual([
        { edition: ASN, sha256: sha256Hex(archives[ASN]) },
        { edition: COUNTRY, sha256: sha256Hex(archives[COUNTRY]) },
      ]);
      const status = await db.pool.query("SELECT last_success_at, last_error, rederive_after_id FROM geolite_update_status");
      expect(status.rows[0]).toMatchObject({ last_error: null, rederive_after_id: null });
      expect(status.rows[0]?.last_success_at).toBeInstanceOf(Date);
      expect(maxmind.requests.every((search) => search.includes(`license_key=${KEY}`))).toBe(true);

      // A save that leaves the key alone downloads nothing more.
      const before = maxmind.requests.length;
      await store.update({ geolite: { interval_seconds: 7200 } });
      const tick = await producer.enqueue("geolite-update", {});
      const done = await waitFor(async () => {
        const job = await producer.queue.getJob(tick);
        return job?.finishedOn ? job : null;
      }, { timeoutMs: 20_000, what: "scheduled update tick" });
      expect(done.returnvalue).toEqual({ outcome: "skipped", reason: "not-due" });
      expect(maxmind.requests.length).toBe(before);

      // Clearing the key brings the shipped offline databases back everywhere.
      await store.update({ geolite: { api_key: "" } });
      for (const resolver of resolvers) {
        await waitFor(async () => (await resolver.get()).lookupCountry("8.8.8.8") === "US", { timeoutMs: 30_000, what: "offline reload" });
      }
      await waitFor(async () => JSON.stringify(await proxyGeo()) === JSON.stringify(offlineRows), { timeoutMs: 30_000, what: "proxies back to offline" });
      expect((await db.pool.query("SELECT 1 FROM geolite_databases")).rowCount).toBe(0);
    } finally {
      for (const reloader of reloaders) await reloader.stop();
      await store.stop();
      await service.stop();
      await producer.close();
      for (const connection of [commands, producerConnection, ...subscribers]) connection.disconnect();
    }
  });

  it("a corrupt archive, a bad checksum, a file that does not open, a refused redirect or a refused address keep the current databases and report why", async () => {
    await db.pool.query(`INSERT INTO global_config (id, config) VALUES (1, $1::jsonb) ON CONFLICT (id) DO NOTHING`, [
      JSON.stringify({ geolite: { api_key: KEY, auto_update: true, interval_seconds: 86400, download_base_url: baseUrl } }),
    ]);
    let announcements = 0;
    const deps = { pool: db.pool, guard, logger, announce: async () => void announcements++ };
    expect(await updateGeoLite(deps, { force: true })).toMatchObject({ outcome: "updated" });
    expect(announcements).toBe(1);
    const storedBefore = (await db.pool.query("SELECT edition, sha256, data FROM geolite_databases ORDER BY edition")).rows;
    const resolver = createStoredGeoResolver(db.pool);
    expect((await resolver.get()).lookupCountry("8.8.8.8")).toBe("SE");

    const other = await buildArchives({ "8.8.8.0/24": { country: "DE", asn: 64999, org: "Hetzner Online GmbH" } });
    const corrupt = Buffer.concat([archives[COUNTRY].subarray(0, 200), Buffer.alloc(400, 7)]);
    const cases: { name: string; arrange: () => void | Promise<void>; deps?: Partial<typeof deps>; error: RegExp }[] = [
      { name: "corrupt archive", arrange: () => maxmind.serve({ [COUNTRY]: corrupt, [ASN]: corrupt }), error: /corrupt archive/ },
      { name: "bad checksum", arrange: () => maxmind.serve(other, () => sha256Hex(archives[COUNTRY])), error: /checksum mismatch/ },
      {
        // The published checksum matches and the archive unpacks, but its file is no MMDB.
        name: "file that does not open",
        arrange: async () => {
          const notMmdb = Buffer.from("neither a search tree nor metadata\n".repeat(50));
          maxmind.serve({ [COUNTRY]: await buildMaxMindArchive(COUNTRY, notMmdb), [ASN]: await buildMaxMindArchive(ASN, notMmdb) });
        },
        error: /GeoLite2-Country\.mmdb does not open/,
      },
      { name: "HTTP error", arrange: () => maxmind.served.clear(), error: /HTTP 404/ },
      {
        name: "redirect to a private address",
        arrange: () => {
          maxmind.serve(other);
          maxmind.redirectTo = `http://127.0.0.2:${new URL(baseUrl).port}/app/geoip_download`;
        },
        // The first hop (127.0.0.1) passes; the redirect's target is refused.
        error: /OutboundBlockedError: outbound connection to 127\.0\.0\.2 refused: 127\.0\.0\.2 is loopback/,
      },
      {
        name: "guard without ALLOW_PRIVATE_NETWORK_TARGETS",
        arrange: () => {
          maxmind.serve(other);
          maxmind.redirectTo = null;
        },
        deps: { guard: new OutboundGuard({ allowPrivateNetworkTargets: false }) },
        error: /OutboundBlockedError: outbound connection to 127\.0\.0\.1 refused/,
      },
    ];
    for (const scenario of cases) {
      await scenario.arrange();
      const requestsBefore = maxmind.requests.length;
      const result = await updateGeoLite({ ...deps, ...scenario.deps }, { force: true });
      expect([scenario.name, result]).toEqual([scenario.name, { outcome: "failed", error: expect.stringMatching(scenario.error) }]);
      const status = (await db.pool.query<{ last_error: string }>("SELECT last_error FROM geolite_update_status")).rows[0];
      expect([scenario.name, status?.last_error]).toEqual([scenario.name, expect.stringMatching(scenario.error)]);
      expect(status?.last_error).not.toContain(KEY);
      expect((await db.pool.query("SELECT edition, sha256, data FROM geolite_databases ORDER BY edition")).rows).toEqual(storedBefore);
      expect(announcements).toBe(1);
      if (scenario.name === "redirect to a private address") expect(maxmind.requests.length).toBe(requestsBefore + 1);
      await resolver.reload();
      expect((await resolver.get()).lookupCountry("8.8.8.8")).toBe("SE");
    }
  });

  it("downloads again once geolite.interval_seconds has passed since the last success, not before", async () => {
    await db.pool.query(`INSERT INTO global_config (id, config) VALUES (1, $1::jsonb) ON CONFLICT (id) DO UPDATE SET config = EXCLUDED.config`, [
      JSON.stringify({ geolite: { api_key: KEY, auto_update: true, interval_seconds: 3600, download_base_url: baseUrl } }),
    ]);
    const deps = { pool: db.pool, guard, logger, announce: async () => undefined };
    expect(await updateGeoLite(deps)).toMatchObject({ outcome: "updated" });
    expect(await updateGeoLite(deps)).toEqual({ outcome: "skipped", reason: "not-due" });
    await db.pool.query("UPDATE geolite_update_status SET last_success_at = now() - interval '3601 seconds', last_attempt_at = now() - interval '3601 seconds'");
    expect(await updateGeoLite(deps)).toMatchObject({ outcome: "updated" });
    // auto_update off: no download, even when due.
    await db.pool.query(`UPDATE global_config SET config = jsonb_set(config, '{geolite,auto_update}', 'false')`);
    await db.pool.query("UPDATE geolite_update_status SET last_success_at = NULL, last_attempt_at = NULL");
    expect(await updateGeoLite(deps, { force: true })).toEqual({ outcome: "skipped", reason: "auto-update-off" });
  });

  it("re-derives existing proxies in bounded batches that resume from the saved cursor", async () => {
    await db.pool.query(`INSERT INTO global_config (id, config) VALUES (1, $1::jsonb) ON CONFLICT (id) DO UPDATE SET config = EXCLUDED.config`, [
      JSON.stringify({ geolite: { api_key: KEY, auto_update: true, interval_seconds: 86400, download_base_url: baseUrl } }),
    ]);
    const deps = { pool: db.pool, guard, logger, announce: async () => undefined };
    expect(await updateGeoLite(deps, { force: true })).toMatchObject({ outcome: "updated" });
    const geo = createStoredGeoResolver(db.pool);
    // One proxy per run (batch of one, no time budget left after it): three runs, each resuming.
    const runs = [];
    for (let i = 0; i < 10; i++) {
      const run = await rederiveProxyGeo(db.pool, () => geo.get(), { batchSize: 1, budgetMs: -1 });
      runs.push(run);
      if (!run.more) break;
    }
    expect(await proxyGeo()).toEqual(derived);
    expect(runs.filter((run) => run.scanned > 0).length).toBeGreaterThanOrEqual(3);
    const status = await db.pool.query("SELECT rederive_after_id, rederive_updated FROM geolite_update_status");
    expect(status.rows[0]).toEqual({ rederive_after_id: null, rederive_updated: 3 });
    // Nothing pending: a further run reads nothing.
    expect(await rederiveProxyGeo(db.pool, () => geo.get())).toEqual({ scanned: 0, updated: 0, more: false, ran: false });
  });
});
