import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import {
  createTestDatabase,
  createTestRedis,
  freePort,
  mmdbWriterAvailable,
  waitFor,
  writeTestMmdb,
  type TestDatabase,
  type TestRedis,
} from "@roost/testkit";
import { runServiceProcess, type ServiceProcess } from "./support/service-process.js";

/**
 * GeoLite with two gateways and the maintenance worker as separate
 * processes: an admin's key saved on one gateway downloads MaxMind-layout
 * archives from a local server, both gateways serve the new data to uploads,
 * and existing proxies are re-derived.
 */

const KEY = "e2e-licence-key-93b1";
const EDITIONS = ["GeoLite2-Country", "GeoLite2-ASN"] as const;

/** `<edition>_<date>/<edition>.mmdb` in a .tar.gz, packed by the system's tar as MaxMind's archives are. */
async function maxMindArchive(dir: string, edition: string, mmdb: Buffer): Promise<Buffer> {
  const folder = `${edition}_20261120`;
  await mkdir(path.join(dir, folder), { recursive: true });
  await writeFile(path.join(dir, folder, `${edition}.mmdb`), mmdb);
  const archive = path.join(dir, `${edition}.tar.gz`);
  const packed = spawnSync("tar", ["-czf", archive, "-C", dir, folder]);
  if (packed.status !== 0) throw new Error(`tar failed: ${packed.stderr.toString()}`);
  return readFile(archive);
}

const describeWithWriter = mmdbWriterAvailable() ? describe : describe.skip;

describeWithWriter("GeoLite with two gateways and the maintenance worker as separate processes", () => {
  let database: TestDatabase;
  let redis: TestRedis;
  let dir: string;
  let db: pg.Pool;
  let maxmind: Server;
  let maxmindBase: string;
  const requests: string[] = [];
  const children: ServiceProcess[] = [];
  const gateways: { base: string; process: ServiceProcess }[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    redis = createTestRedis();
    dir = await mkdtemp(path.join(os.tmpdir(), "roost-geolite-"));
    db = new pg.Pool({ connectionString: database.url, max: 2 });
    const network = "8.8.8.0/24";
    const mmdbs = {
      "GeoLite2-Country": writeTestMmdb("GeoLite2-Country", [{ network, data: { country: { iso_code: "SE" } } }]),
      "GeoLite2-ASN": writeTestMmdb("GeoLite2-ASN", [{ network, data: { autonomous_system_number: 64500, autonomous_system_organization: "CELLCO-PART" } }]),
    };
    const archives = new Map<string, Buffer>();
    for (const edition of EDITIONS) archives.set(edition, await maxMindArchive(dir, edition, mmdbs[edition]));
    maxmind = createServer((request, response) => {
      const url = new URL(request.url ?? "/", "http://localhost");
      requests.push(`${url.pathname}${url.search}`);
      const archive = archives.get(url.searchParams.get("edition_id") ?? "");
      if (url.pathname !== "/app/geoip_download" || !archive || url.searchParams.get("license_key") !== KEY) return void response.writeHead(404).end();
      const suffix = url.searchParams.get("suffix");
      if (suffix === "tar.gz") return void response.writeHead(200).end(archive);
      if (suffix === "tar.gz.sha256") return void response.writeHead(200).end(`${createHash("sha256").update(archive).digest("hex")}  archive.tar.gz\n`);
      response.writeHead(400).end();
    });
    await new Promise<void>((resolve) => maxmind.listen(0, "127.0.0.1", resolve));
    maxmindBase = `http://127.0.0.1:${(maxmind.address() as AddressInfo).port}`;

    const infra = { DATABASE_URL: database.url, REDIS_URL: redis.url, QUEUE_PREFIX: redis.prefix.slice(0, -1), ALLOW_PRIVATE_NETWORK_TARGETS: "true" };
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      const gateway = runServiceProcess("gateway", { ...infra, PORT: String(port), DATA_DIR: dir, PASSWORD_HASH_MEMORY_KIB: "1024", PASSWORD_HASH_TIME_COST: "1" }, "info");
      children.push(gateway);
      gateways.push({ base: `http://127.0.0.1:${port}`, process: gateway });
    }
    children.push(runServiceProcess("maintenance", infra));
    for (const { base, process } of gateways) {
      await waitFor(
        async () => {
          if (process.child.exitCode !== null) throw new Error(`gateway exited: ${process.output.stderr}`);
          return (await fetch(`${base}/healthz`).catch(() => null))?.status === 200;
        },
        { timeoutMs: 30_000, what: "a gateway" },
      );
    }
  }, 120_000);

  afterAll(async () => {
    for (const started of children) if (started.child.exitCode === null && started.child.signalCode === null) started.child.kill("SIGTERM");
    await Promise.all(children.map((started) => started.exited));
    await db?.end();
    if (maxmind?.listening) await new Promise((resolve) => maxmind.close(resolve));
    await database?.drop();
    await redis?.cleanup();
    await rm(dir, { recursive: true, force: true });
  });

  it("an admin's key downloads through the maintenance worker, every gateway serves the new data, and existing proxies are re-derived", async () => {
    const [first, second] = gateways;
    if (!first || !second) throw new Error("two gateways expected");
    const registered = await fetch(`${first.base}/api/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "geo-admin@example.com", password: "Correct-Horse-42" }),
    });
    const { token } = (await registered.json()) as { token: string };
    const upload = async (base: string, line: string): Promise<void> => {
      const form = new FormData();
      form.append("proxyTextarea", line);
      expect((await fetch(`${base}/api/addProxies`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form })).status).toBe(200);
    };
    const geoOf = async (port: number) =>
      (await db.query<{ country: string; asn: number | null; estimated_type: string }>("SELECT country, asn, estimated_type FROM proxies WHERE port = $1", [port])).rows[0];

    // Before the key: the shipped offline databases (8.8.8.0/24 is Google's, US, a datacenter).
    await upload(first.base, "8.8.8.8:1001");
    expect(await geoOf(1001)).toMatchObject({ country: "US", estimated_type: "datacenter" });

    const saved = await fetch(`${first.base}/api/saveSettings`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ geolite: { api_key: KEY, download_base_url: maxmindBase } }),
    });
    expect(saved.status).toBe(200);

    const geoLite = { country: "SE", asn: 64500, estimated_type: "mobile" };
    await waitFor(async () => JSON.stringify(await geoOf(1001)) === JSON.stringify(geoLite), { timeoutMs: 60_000, what: "the existing proxy re-derived" });
    expect(requests.some((request) => request.startsWith("/app/geoip_download?edition_id=GeoLite2-Country&license_key=") && request.endsWith("&suffix=tar.gz"))).toBe(true);
    expect(requests.some((request) => request.includes("edition_id=GeoLite2-ASN") && request.endsWith("&suffix=tar.gz.sha256"))).toBe(true);

    // The first gateway had loaded the offline data and reloads on the announcement; the second loads on its first upload.
    await waitFor(() => first.process.output.stdout.includes('"reason":"announcement"') && first.process.output.stdout.includes("geo databases reloaded"), {
      timeoutMs: 30_000,
      what: "the first gateway's reload",
    });
    await upload(first.base, "8.8.8.9:1002");
    await upload(second.base, "8.8.8.10:1003");
    expect(await geoOf(1002)).toEqual(geoLite);
    expect(await geoOf(1003)).toEqual(geoLite);
  }, 120_000);
});
