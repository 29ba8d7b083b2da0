import net from "node:net";
import type { AddressInfo } from "node:net";

import { UpstreamConnections } from "./upstream-connections.js";

describe("kept-alive upstream connections", () => {
  let server: net.Server;
  let port: number;
  let accepted = 0;

  beforeAll(async () => {
    server = net.createServer((socket) => {
      accepted++;
      socket.on("error", () => undefined);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it("reuses one connection across many requests with one idle-timeout listener on it, and closes it when idle too long", async () => {
    const connections = new UpstreamConnections({ idleMs: 300, track: () => undefined });
    const first = await connections.acquire("127.0.0.1", port, 1000);
    const socket = first.connection.socket;
    const baseline = socket.listenerCount("timeout");
    connections.release("127.0.0.1", port, first.connection);
    for (let i = 0; i < 25; i++) {
      const again = await connections.acquire("127.0.0.1", port, 1000);
      expect(again).toMatchObject({ reused: true });
      expect(again.connection.socket).toBe(socket);
      connections.release("127.0.0.1", port, again.connection);
    }
    expect(accepted).toBe(1);
    expect(socket.listenerCount("timeout")).toBeLessThanOrEqual(Math.max(baseline, 1));
    await new Promise<void>((resolve) => socket.once("close", () => resolve()));
    const fresh = await connections.acquire("127.0.0.1", port, 1000);
    expect(fresh.reused).toBe(false);
    fresh.connection.socket.destroy();
  });
});
