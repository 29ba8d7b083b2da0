import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { createTestDatabase, createTestRedis, freePort, startNginxJudge, startTinyproxy, waitFor, type NginxJudge, type ProxyPeer, type TestDatabase, type TestRedis } from "@roost/testkit";
import { runServiceProcess, type ServiceProcess } from "./support/service-process.js";

/**
 * The gateway and a rotator as separate processes on one PostgreSQL and
 * Redis: a rotator created over HTTP gets a listener within seconds, rotates
 * over the owner's alive proxies, and its port closes within seconds of the
 * rotator's deletion and of the owner's account deletion.
 */
const PASSWORD = "Correct-Horse-42";

const run = (service: string, env: Record<string, string>): ServiceProcess => runServiceProcess(service, env);

function curl(args: readonly string[]): Promise<{ exitCode: number; body: string }> {
  return new Promise((resolve) => {
    execFile("curl", ["-s", "--max-time", "10", ...args], (error, stdout) => resolve({ exitCode: error && typeof error.code === "number" ? error.code : 0, body: stdout }));
  });
}

const listening = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });

describe("gateway and rotator as separate processes", () => {
  let database: TestDatabase;
  let redis: TestRedis;
  let origin: NginxJudge;
  let upstreams: ProxyPeer[];
  let dataDir: string;
  let db: pg.Pool;
  let base: string;
  const children: ServiceProcess[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    redis = createTestRedis();
    [origin, ...upstreams] = await Promise.all([startNginxJudge(), startTinyproxy({ egressAddress: "127.0.0.2" }), startTinyproxy({ egressAddress: "127.0.0.3" })]);
    dataDir = await mkdtemp(path.join(os.tmpdir(), "roost-rotator-split-"));
    db = new pg.Pool({ connectionString: database.url, max: 2 });
    const infra = { DATABASE_URL: database.url, REDIS_URL: redis.url, QUEUE_PREFIX: redis.prefix.slice(0, -1), ALLOW_PRIVATE_NETWORK_TARGETS: "true", ROTATOR_PASSWORD_KEY: "split-test-password-key" };
    const port = await freePort();
    const gateway = run("gateway", { ...infra, PORT: String(port), DATA_DIR: dataDir, PASSWORD_HASH_MEMORY_KIB: "1024", PASSWORD_HASH_TIME_COST: "1" });
    children.push(gateway);
    base = `http://127.0.0.1:${port}`;
    await waitFor(
      async () => {
        if (gateway.child.exitCode !== null) throw new Error(`gateway exited: ${gateway.output.stderr}`);
        return (await fetch(`${base}/healthz`).catch(() => null))?.status === 200;
      },
      { timeoutMs: 30_000, what: "the gateway" },
    );
    const portStart = await freePort();
    const rotator = run("rotator", { ...infra, DATA_DIR: path.join(dataDir, "rotator"), ROTATOR_INSTANCE_ID: "split-1", ROTATOR_INSTANCE_NAME: "split", ROTATING_PROXY_PORT_START: String(portStart), ROTATING_PROXY_PORT_END: String(portStart + 4) });
    children.push(rotator);
  }, 120_000);

  afterAll(async () => {
    for (const started of children) if (started.child.exitCode === null && started.child.signalCode === null) started.child.kill("SIGTERM");
    await Promise.all(children.map((started) => started.exited));
    await db?.end();
    await Promise.all([origin?.stop(), ...(upstreams ?? []).map((u) => u.stop())]);
    await database?.drop();
    await redis?.cleanup();
    await rm(dataDir, { recursive: true, force: true });
  });

  const register = async (email: string): Promise<{ token: string; userId: number }> => {
    const res = await fetch(`${base}/api/register`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email, password: PASSWORD }) });
    const token = ((await res.json()) as { token: string }).token;
    const userId = (await db.query<{ id: number }>("SELECT id FROM users WHERE email = $1", [email])).rows[0]?.id ?? 0;
    // Two alive HTTP proxies, as the checker would leave them.
    for (const upstream of upstreams) await db.query("INSERT INTO proxies (user_id, ip, port, alive, alive_protocols, reputation_label) VALUES ($1, '127.0.0.1', $2, true, 1, 'good')", [userId, upstream.port]);
    return { token, userId };
  };
  const api = (token: string, method: string, route: string, body?: unknown) =>
    fetch(`${base}${route}`, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const egress = (body: string): string | undefined => /REMOTE_ADDR = (\S+)/.exec(body)?.[1];

  it("opens a listener after create, rotates, keeps sessions, and closes after delete and after account deletion", async () => {
    const { token } = await register("rot-split@example.com");
    const instances = await waitFor(
      async () => {
        const list = (await (await api(token, "GET", "/api/rotatingProxies/instances")).json()) as { instances: { id: string; name: string; free_ports: number }[] };
        return list.instances.find((i) => i.id === "split-1");
      },
      { timeoutMs: 30_000, what: "the rotator instance" },
    );
    expect(instances).toMatchObject({ name: "split", free_ports: 5 });

    const created = await api(token, "POST", "/api/rotatingProxies", { name: "main", instance_id: "split-1", protocol: "http", listen_protocol: "http", auth_required: true, auth_username: "bob", auth_password: "rotator-pw" });
    expect(created.status).toBe(201);
    const rotator = (await created.json()) as { id: number; listen_port: number; alive_proxy_count: number };
    expect(rotator.alive_proxy_count).toBe(2);
    await waitFor(() => listening(rotator.listen_port), { timeoutMs: 10_000, what: "the listener" });

    const through = (user: string) => curl(["-x", `http://${user}:rotator-pw@127.0.0.1:${rotator.listen_port}`, origin.httpUrl]);
    const seen = [];
    for (let i = 0; i < 4; i++) seen.push(egress((await through("bob")).body));
    // The rotation is the pool in proxy id order (the .2 proxy was inserted first); next walks it too, from the gateway process.
    expect(seen).toEqual(["127.0.0.2", "127.0.0.3", "127.0.0.2", "127.0.0.3"]);
    const next = async (): Promise<{ port: number; protocol: string }> => (await (await api(token, "POST", `/api/rotatingProxies/${rotator.id}/next`)).json()) as { port: number; protocol: string };
    expect([await next(), await next(), await next()]).toEqual(
      [upstreams[0], upstreams[1], upstreams[0]].map((upstream) => expect.objectContaining({ port: upstream?.port, protocol: "http" })),
    );
    const sticky = [];
    for (let i = 0; i < 3; i++) sticky.push(egress((await through("bob-session-s1")).body));
    expect(new Set(sticky).size).toBe(1);
    expect((await curl(["-o", "/dev/null", "-w", "%{http_code}", "-x", `http://bob:wrong@127.0.0.1:${rotator.listen_port}`, origin.httpUrl])).body).toBe("407");

    expect((await api(token, "DELETE", `/api/rotatingProxies/${rotator.id}`)).status).toBe(204);
    await waitFor(async () => !(await listening(rotator.listen_port)), { timeoutMs: 10_000, what: "the listener closed after delete" });

    const second = (await (await api(token, "POST", "/api/rotatingProxies", { name: "second", instance_id: "split-1", protocol: "http", auth_required: true, auth_username: "bob", auth_password: "rotator-pw" })).json()) as { listen_port: number };
    await waitFor(() => listening(second.listen_port), { timeoutMs: 10_000, what: "the second listener" });
    expect((await api(token, "POST", "/api/deleteAccount", { password: PASSWORD })).status).toBeLessThan(300);
    await waitFor(async () => !(await listening(second.listen_port)), { timeoutMs: 10_000, what: "the listener closed after account deletion" });
  }, 90_000);
});
