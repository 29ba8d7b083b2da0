import { createRedisConnection } from "@roost/queue";
import { loadRotatorUpstreams, registerRotatorInstance, rotatorKeys, UpstreamPool, verifyRotatorPassword, type RotatorInstance } from "@roost/rotation";
import { waitFor } from "@roost/testkit";
import type { Redis } from "ioredis";

import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";

interface User {
  token: string;
  email: string;
  id: number;
}

describe("rotating proxies API", () => {
  let harness: GatewayHarness;
  let subscriber: Redis;
  let alice: User;
  let bob: User;
  const messages: string[] = [];
  const prefix = (): string => harness.redis.prefix.slice(0, -1);

  const instance = (id: string, portStart: number, portEnd: number, bindHost = "127.0.0.1"): RotatorInstance => ({
    id,
    name: `${id}-name`,
    region: "eu",
    port_start: portStart,
    port_end: portEnd,
    listen_host: bindHost === "0.0.0.0" ? "rotator.example.net" : bindHost,
    bind_host: bindHost,
  });

  const user = async (): Promise<User> => {
    const { token, email } = await harness.register();
    const id = (await harness.db.pool.query<{ id: number }>("SELECT id FROM users WHERE email = $1", [email])).rows[0]?.id ?? 0;
    return { token, email, id };
  };

  const valid = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
    name: `r-${Math.random().toString(36).slice(2)}`,
    instance_id: "inst-a",
    protocol: "http",
    listen_protocol: "http",
    ...overrides,
  });

  const create = (who: User, body: unknown) => harness.http.post("/api/rotatingProxies").set("Authorization", `Bearer ${who.token}`).send(body as object);
  const get = (who: User, path: string) => harness.http.get(path).set("Authorization", `Bearer ${who.token}`);

  beforeAll(async () => {
    harness = await startGatewayHarness({ ROTATOR_PASSWORD_KEY: "api-test-key" });
    await Promise.all([
      registerRotatorInstance(harness.deps.redis, prefix(), instance("inst-a", 30000, 30099), 600_000),
      registerRotatorInstance(harness.deps.redis, prefix(), instance("inst-open", 31000, 31009, "0.0.0.0"), 600_000),
      registerRotatorInstance(harness.deps.redis, prefix(), instance("inst-one", 32000, 32000), 600_000),
      registerRotatorInstance(harness.deps.redis, prefix(), instance("inst-c", 33000, 33009), 600_000),
    ]);
    subscriber = createRedisConnection(harness.redis.url, "worker");
    subscriber.on("message", (_channel: string, message: string) => messages.push(message));
    await subscriber.subscribe(rotatorKeys(prefix()).changedChannel, rotatorKeys(prefix()).checkedChannel);
    alice = await user();
    bob = await user();
  }, 60_000);

  afterAll(async () => {
    await subscriber?.quit();
    await harness?.close();
  });

  it("needs a token", async () => {
    expect((await harness.http.get("/api/rotatingProxies")).status).toBe(401);
    expect((await harness.http.post("/api/rotatingProxies").send(valid())).status).toBe(401);
  });

  it.each([
    ["a non-object body", [1, 2], /JSON object/],
    ["a missing name", valid({ name: undefined }), /name is required/],
    ["a blank name", valid({ name: "   " }), /name is required/],
    ["a name over 120 characters", valid({ name: "n".repeat(121) }), /at most 120/],
    ["a missing instance_id", valid({ instance_id: undefined }), /instance_id is required/],
    ["an instance no live rotator has", valid({ instance_id: "ghost" }), /not an available rotator instance/],
    ["a missing protocol", valid({ protocol: undefined }), /protocol is required/],
    ["an unknown protocol", valid({ protocol: "ftp" }), /protocol must be one of/],
    ["an unknown listen_protocol", valid({ listen_protocol: "quic" }), /listen_protocol must be one of/],
    ["an unsupported transport", valid({ transport_protocol: "udp" }), /transport_protocol must be tcp/],
    ["an unsupported listen transport", valid({ listen_transport_protocol: "udp" }), /listen_transport_protocol must be tcp/],
    ["auth without a username", valid({ auth_required: true, auth_password: "pw" }), /auth_username and auth_password are required/],
    ["auth without a password", valid({ auth_required: true, auth_username: "u", auth_password: "" }), /auth_username and auth_password are required/],
    ["a username with an option suffix", valid({ auth_required: true, auth_username: "u-session-x", auth_password: "pw" }), /without a -session-/],
    ["an unknown reputation label", valid({ reputation_labels: ["good", "unknown"] }), /reputation_labels accepts good, neutral, poor/],
    ["reputation labels that are not an array", valid({ reputation_labels: "good" }), /reputation_labels accepts/],
    ["an uptime type without a percentage", valid({ uptime_filter_type: "min" }), /given together/],
    ["a percentage without an uptime type", valid({ uptime_percentage: 50 }), /given together/],
    ["an unknown uptime type", valid({ uptime_filter_type: "avg", uptime_percentage: 50 }), /min or max/],
    ["a percentage over 100", valid({ uptime_filter_type: "min", uptime_percentage: 101 }), /0 to 100/],
    ["a negative percentage", valid({ uptime_filter_type: "max", uptime_percentage: -1 }), /0 to 100/],
    ["a fractional percentage", valid({ uptime_filter_type: "max", uptime_percentage: 50.5 }), /0 to 100/],
    ["no auth on an instance listening beyond loopback", valid({ instance_id: "inst-open" }), /auth_required must be true/],
  ])("answers 400 for %s", async (_label, body, message) => {
    const res = await create(alice, body);
    expect(res.status).toBe(400);
    expect((res.body as { error: string }).error).toMatch(message);
  });

  it("answers 400 for a protocol the user disabled", async () => {
    const carol = await user();
    await harness.db.pool.query("UPDATE user_settings SET socks4_protocol = false WHERE user_id = $1", [carol.id]);
    const res = await create(carol, valid({ protocol: "socks4" }));
    expect(res.status).toBe(400);
    expect((res.body as { error: string }).error).toMatch(/socks4 is not enabled/);
    expect((await create(carol, valid({ protocol: "socks5" }))).status).toBe(201);
  });

  it("creates with every contract field, stores the password as an HMAC and never shows it", async () => {
    await harness.db.pool.query(
      "INSERT INTO proxies (user_id, ip, port, alive, alive_protocols, reputation_label) VALUES ($1, '198.51.100.7', 8001, true, 1, 'good'), ($1, '198.51.100.8', 8002, true, 1, 'poor')",
      [alice.id],
    );
    const res = await create(alice, valid({ name: "main", instance_id: "inst-open", auth_required: true, auth_username: "alice", auth_password: "s3cret-pass", reputation_labels: ["good"], uptime_filter_type: "min", uptime_percentage: 0 }));
    expect(res.status).toBe(201);
    const body = res.body as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(
      [
        "alive_proxy_count", "auth_required", "created_at", "id", "instance_id", "instance_name", "instance_region", "listen_address", "listen_host", "listen_port",
        "listen_protocol", "listen_transport_protocol", "name", "protocol", "reputation_labels", "transport_protocol", "uptime_filter_type", "uptime_percentage",
      ].sort(),
    );
    expect(body).toMatchObject({
      name: "main", instance_id: "inst-open", instance_name: "inst-open-name", instance_region: "eu", protocol: "http", listen_protocol: "http",
      transport_protocol: "tcp", listen_transport_protocol: "tcp", uptime_filter_type: "min", uptime_percentage: 0, alive_proxy_count: 1,
      listen_port: 31000, auth_required: true, listen_host: "rotator.example.net", listen_address: "rotator.example.net:31000", reputation_labels: ["good"],
    });
    const stored = (await harness.db.pool.query<{ auth_password: string }>("SELECT auth_password FROM rotating_proxies WHERE id = $1", [body.id])).rows[0]?.auth_password ?? "";
    expect(stored).not.toContain("s3cret-pass");
    expect(verifyRotatorPassword("api-test-key", "s3cret-pass", stored)).toBe(true);
    await waitFor(() => messages.some((m) => m.includes(`"userId":${alice.id}`) && m.includes("inst-open")), { what: "change published" });

    const list = await get(alice, "/api/rotatingProxies");
    expect(list.status).toBe(200);
    expect(JSON.stringify(list.body)).not.toMatch(/s3cret-pass|auth_password|auth_username/);
    expect((list.body as { rotating_proxies: { name: string }[] }).rotating_proxies.map((r) => r.name)).toContain("main");
  });

  it("tells rotators when the user deletes proxies, so pools shrink at once", async () => {
    const frank = await user();
    await harness.db.pool.query("INSERT INTO proxies (user_id, ip, port, alive, alive_protocols) VALUES ($1, '198.51.100.9', 8009, true, 1)", [frank.id]);
    const res = await harness.http.delete("/api/proxies").set("Authorization", `Bearer ${frank.token}`).send({ scope: "all" });
    expect(res.status).toBe(200);
    await waitFor(() => messages.includes(JSON.stringify({ userId: frank.id, proxyIds: [], removedIds: [] })), { what: "pool refresh published" });
  });

  it("answers 409 for a duplicate name of the same user only", async () => {
    expect((await create(alice, valid({ name: "dup" }))).status).toBe(201);
    const again = await create(alice, valid({ name: "dup" }));
    expect(again.status).toBe(409);
    expect((again.body as { error: string }).error).toMatch(/already exists/);
    expect((await create(bob, valid({ name: "dup" }))).status).toBe(201);
  });

  it("keeps tenants apart: list, delete and next of another user's rotator", async () => {
    const mine = (await create(bob, valid({ name: "bob-only" }))).body as { id: number };
    const aliceList = (await get(alice, "/api/rotatingProxies")).body as { rotating_proxies: { id: number }[] };
    expect(aliceList.rotating_proxies.map((r) => r.id)).not.toContain(mine.id);
    expect((await harness.http.delete(`/api/rotatingProxies/${mine.id}`).set("Authorization", `Bearer ${alice.token}`)).status).toBe(404);
    expect((await harness.http.post(`/api/rotatingProxies/${mine.id}/next`).set("Authorization", `Bearer ${alice.token}`)).status).toBe(404);
    expect((await harness.http.delete("/api/rotatingProxies/999999").set("Authorization", `Bearer ${alice.token}`)).status).toBe(404);
    expect((await harness.http.delete("/api/rotatingProxies/abc").set("Authorization", `Bearer ${alice.token}`)).status).toBe(404);
    const deleted = await harness.http.delete(`/api/rotatingProxies/${mine.id}`).set("Authorization", `Bearer ${bob.token}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe("");
    expect((await harness.http.delete(`/api/rotatingProxies/${mine.id}`).set("Authorization", `Bearer ${bob.token}`)).status).toBe(404);
  });

  it("next rotates over the alive pool with the rotator's protocol, and answers 409 when the pool is empty", async () => {
    const dave = await user();
    const rotator = (await create(dave, valid({ name: "nx", protocol: "socks5", listen_protocol: "http" }))).body as { id: number };
    const next = () => harness.http.post(`/api/rotatingProxies/${rotator.id}/next`).set("Authorization", `Bearer ${dave.token}`);
    const empty = await next();
    expect(empty.status).toBe(409);
    expect((empty.body as { error: string }).error).toMatch(/No alive proxies/);
    const ids = (
      await harness.db.pool.query<{ id: number }>(
        "INSERT INTO proxies (user_id, ip, port, username, password, alive, alive_protocols) VALUES ($1, '198.51.100.1', 1080, 'u', 'p', true, 8), ($1, '198.51.100.2', 1080, '', '', true, 8), ($1, '198.51.100.3', 1080, '', '', true, 1) RETURNING id",
        [dave.id],
      )
    ).rows.map((r) => r.id);
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push((await next()).body as { proxy_id: number; protocol: string; has_auth: boolean; username: string; password: string });
    expect(answers.map((a) => a.proxy_id)).toEqual([ids[0], ids[1], ids[0]]);
    expect(answers[0]).toEqual({ proxy_id: ids[0], ip: "198.51.100.1", port: 1080, username: "u", password: "p", has_auth: true, protocol: "socks5" });
    expect(answers[1]?.has_auth).toBe(false);
  });

  it("next walks the listener's rotation: proxy id order, continuing after the last id when the pool changes, distinct turns when concurrent", async () => {
    const erin = await user();
    const rotator = (await create(erin, valid({ name: "walk" }))).body as { id: number };
    const next = async (): Promise<number> => ((await harness.http.post(`/api/rotatingProxies/${rotator.id}/next`).set("Authorization", `Bearer ${erin.token}`)).body as { proxy_id: number }).proxy_id;
    const insert = async (octets: number[]): Promise<number[]> =>
      (await harness.db.pool.query<{ id: number }>("INSERT INTO proxies (user_id, ip, port, alive, alive_protocols) SELECT $1, '198.51.100.' || o, 8080, true, 1 FROM unnest($2::int[]) o RETURNING id", [erin.id, octets])).rows
        .map((row) => row.id)
        .sort((x, y) => x - y);
    const [a, b, c, d] = await insert([11, 12, 13, 14]);
    // The listener's pool as the rotator process loads it.
    const ring = new UpstreamPool();
    const reload = async (): Promise<void> => ring.replace((await loadRotatorUpstreams(harness.db.pool, [rotator.id])).get(rotator.id) ?? []);
    await reload();
    expect([await next(), await next()]).toEqual([a, b]);
    expect([ring.pick()?.proxyId, ring.pick()?.proxyId]).toEqual([a, b]);
    // c is due; a dies and e arrives: both go on with c (no skip), d, e, then wrap to b.
    await harness.db.pool.query("UPDATE proxies SET alive = false, alive_protocols = 0 WHERE id = $1", [a]);
    const [e] = await insert([15]);
    await reload();
    expect([await next(), await next(), await next(), await next()]).toEqual([c, d, e, b]);
    expect([1, 2, 3, 4].map(() => ring.pick()?.proxyId)).toEqual([c, d, e, b]);
    expect([await next(), ring.pick()?.proxyId]).toEqual([c, c]);
    // d is due and dies: both go on with e.
    await harness.db.pool.query("UPDATE proxies SET alive = false, alive_protocols = 0 WHERE id = $1", [d]);
    await reload();
    expect(await next()).toBe(e);
    expect(ring.pick()?.proxyId).toBe(e);
    const concurrent = await Promise.all([next(), next(), next()]);
    expect(new Set(concurrent)).toEqual(new Set([b, c, e]));
  });

  it("lists only instances with free ports, with used + free = total, and answers 503 on a full instance", async () => {
    const before = (await get(alice, "/api/rotatingProxies/instances")).body as { instances: { id: string; used_ports: number; free_ports: number; total_ports: number }[] };
    const one = before.instances.find((i) => i.id === "inst-one");
    expect(one).toEqual({ id: "inst-one", name: "inst-one-name", region: "eu", port_start: 32000, port_end: 32000, used_ports: 0, free_ports: 1, total_ports: 1 });
    for (const i of before.instances) expect(i.used_ports + i.free_ports).toBe(i.total_ports);
    expect((await create(alice, valid({ instance_id: "inst-one" }))).status).toBe(201);
    const full = await create(alice, valid({ instance_id: "inst-one" }));
    expect(full.status).toBe(503);
    expect((full.body as { error: string }).error).toMatch(/No available rotator ports/);
    const after = (await get(alice, "/api/rotatingProxies/instances")).body as { instances: { id: string }[] };
    expect(after.instances.map((i) => i.id)).not.toContain("inst-one");
  });

  it("allocates ports without collisions under 20 concurrent creates, answers 503 past the range and reuses freed ports", async () => {
    const eve = await user();
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => create(eve, valid({ name: `c${i}`, instance_id: "inst-c" }))));
    const created = results.filter((r) => r.status === 201).map((r) => r.body as { id: number; listen_port: number });
    expect(created).toHaveLength(10);
    expect(results.filter((r) => r.status === 503)).toHaveLength(10);
    const ports = created.map((r) => r.listen_port).sort((a, b) => a - b);
    expect(ports).toEqual(Array.from({ length: 10 }, (_, i) => 33000 + i));
    const freed = created.filter((r) => r.listen_port === 33003 || r.listen_port === 33007);
    for (const r of freed) expect((await harness.http.delete(`/api/rotatingProxies/${r.id}`).set("Authorization", `Bearer ${eve.token}`)).status).toBe(204);
    const again = await Promise.all([create(eve, valid({ instance_id: "inst-c" })), create(eve, valid({ instance_id: "inst-c" })), create(eve, valid({ instance_id: "inst-c" }))]);
    expect(again.map((r) => r.status).sort()).toEqual([201, 201, 503]);
    expect(again.filter((r) => r.status === 201).map((r) => (r.body as { listen_port: number }).listen_port).sort()).toEqual([33003, 33007]);
  });
});

describe("rotating proxies API without free instances, with open rotators allowed", () => {
  let harness: GatewayHarness;
  const prefix = (): string => harness.redis.prefix.slice(0, -1);

  beforeAll(async () => {
    harness = await startGatewayHarness({ ROTATING_PROXY_ALLOW_OPEN: "true" });
  }, 60_000);

  afterAll(async () => {
    await harness?.close();
  });

  it("answers 503 when no instance has a free port, and allows no auth beyond loopback under ROTATING_PROXY_ALLOW_OPEN", async () => {
    const { token } = await harness.register();
    const create = (body: object) => harness.http.post("/api/rotatingProxies").set("Authorization", `Bearer ${token}`).send(body);
    const none = await create({ name: "x", instance_id: "any", protocol: "http" });
    expect(none.status).toBe(503);
    expect((none.body as { error: string }).error).toMatch(/No available instances with free ports/);
    expect((await harness.http.get("/api/rotatingProxies/instances").set("Authorization", `Bearer ${token}`)).body).toEqual({ instances: [] });

    await registerRotatorInstance(harness.deps.redis, prefix(), { id: "wide", name: "w", region: "default", port_start: 40000, port_end: 40000, listen_host: "203.0.113.5", bind_host: "0.0.0.0" }, 600_000);
    const open = await create({ name: "open", instance_id: "wide", protocol: "http" });
    expect(open.status).toBe(201);
    expect(open.body).toMatchObject({ auth_required: false, listen_address: "203.0.113.5:40000", listen_protocol: "http" });
    const full = await create({ name: "second", instance_id: "wide", protocol: "http" });
    expect(full.status).toBe(503);
  });
});
