import type { AddressInfo } from "node:net";
import type net from "node:net";
import { waitFor } from "@roost/testkit";
import { startGatewayHarness, type GatewayHarness } from "../../test-support/gateway.harness.js";
import { startOwnedRedis, type OwnedRedis } from "../../test-support/owned-redis.js";
import { rawRequest } from "../../test-support/stalled-clients.js";

/**
 * An upload whose client goes away while the auth guard waits for Redis
 * (the token's revocation check) reaches the route with its response closed
 * already. It must not take an upload slot: nothing would ever end that
 * request, and the user's later uploads would wait behind it for good
 * (docs/proxies.md "Connections held by uploads and exports"). Redis is a
 * server of this file's own, frozen (SIGSTOP) while the client leaves, so
 * the guard is still waiting when the connection closes.
 */
describe("POST /api/addProxies: a client that leaves during the auth check", () => {
  let owned: OwnedRedis;
  let h: GatewayHarness;
  let port: number;
  const sockets: net.Socket[] = [];

  beforeAll(async () => {
    owned = await startOwnedRedis();
    h = await startGatewayHarness({ REDIS_URL: owned.url, AUTH_REVOCATION_FAIL_OPEN: "false", AUTH_REVOCATION_TIMEOUT_MS: "10000" });
    ({ port } = (await h.service.start()) as AddressInfo);
  });
  afterAll(async () => {
    // The Redis server last, whatever failed before it: a frozen one would keep Jest waiting.
    try {
      owned.resume();
      for (const socket of sockets) socket.destroy();
      await h.service.stop();
      await h.close();
    } finally {
      await owned.close();
    }
  });

  const upload = (token: string, lines: string) =>
    h.http.post("/api/addProxies").set("Authorization", `Bearer ${token}`).attach("file", Buffer.from(lines), "p.txt").timeout(15_000);

  it("takes no slot for it, so the user's next uploads go through", async () => {
    const { token } = await h.register();
    const part = ["--XYZ", 'Content-Disposition: form-data; name="file"; filename="p.txt"', "Content-Type: text/plain", "", "5.5.5.5:8080", "--XYZ--", ""].join("\r\n");
    const head = ["POST /api/addProxies HTTP/1.1", `Authorization: Bearer ${token}`, "Content-Type: multipart/form-data; boundary=XYZ", `Content-Length: ${Buffer.byteLength(part)}`];

    owned.pause();
    try {
      // The whole request, then the client's end of the connection: the server closes its side.
      const socket = await rawRequest(port, head, part, sockets);
      let closed = false;
      socket.on("close", () => (closed = true));
      socket.on("data", () => undefined);
      socket.end();
      await waitFor(() => closed, { what: "the server to close the connection the client ended" });
    } finally {
      owned.resume();
    }

    // Both are served in turn; with a slot lost to the first request, the first of them would wait for good.
    for (const ip of ["5.5.5.6", "5.5.5.7"]) {
      const res = await upload(token, `${ip}:8080\n`);
      expect(res.status).toBe(200);
    }
    const metrics = (await h.http.get("/metrics")).text as string;
    expect(metrics).toMatch(/^svc_connection_slots\{kind="upload",state="held"\} 0$/m);
    expect(metrics).toMatch(/^svc_connection_slots\{kind="upload",state="waiting"\} 0$/m);
    // The request that left stored nothing.
    expect((await h.http.get("/api/getProxyCount").set("Authorization", `Bearer ${token}`)).body).toBe(2);
  }, 60_000);
});
