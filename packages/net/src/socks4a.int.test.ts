import net from "node:net";

import { dialThroughProxy, OutboundGuard, ProxyError } from "./index.js";

// dante does not speak SOCKS4a, so this in-process server reads the request bytes the dialer sends.
interface Socks4Request {
  port: number;
  ip: string;
  userId: string;
  hostname: string | null;
}

async function socks4Server() {
  const requests: Socks4Request[] = [];
  const server = net.createServer((socket) => {
    let buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      buffer = Buffer.concat([buffer, chunk]);
      if (buffer.length < 9) return;
      const userEnd = buffer.indexOf(0, 8);
      if (userEnd === -1) return;
      const ip = [...buffer.subarray(4, 8)].join(".");
      const is4a = ip.startsWith("0.0.0.") && ip !== "0.0.0.0";
      let hostname: string | null = null;
      let end = userEnd + 1;
      if (is4a) {
        const hostEnd = buffer.indexOf(0, userEnd + 1);
        if (hostEnd === -1) return;
        hostname = buffer.subarray(userEnd + 1, hostEnd).toString("latin1");
        end = hostEnd + 1;
      }
      socket.off("data", onData);
      requests.push({ port: buffer.readUInt16BE(2), ip, userId: buffer.subarray(8, userEnd).toString("latin1"), hostname });
      const granted = hostname !== "refuse.example";
      socket.write(Buffer.from([0x00, granted ? 0x5a : 0x5b, 0, 0, 0, 0, 0, 0]));
      if (!granted) return void socket.end();
      const rest = buffer.subarray(end);
      if (rest.length > 0) socket.write(rest);
      socket.pipe(socket);
    };
    socket.on("data", onData);
    socket.on("error", () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as net.AddressInfo).port, requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe("SOCKS4 and SOCKS4a requests", () => {
  const guard = new OutboundGuard({ allowAddress: ({ address }) => address === "127.0.0.1" });
  let server: Awaited<ReturnType<typeof socks4Server>>;
  beforeAll(async () => {
    server = await socks4Server();
  });
  afterAll(async () => {
    await server.close();
  });

  const dial = (host: string, username?: string) =>
    dialThroughProxy({ proxy: { protocol: "socks4", host: "127.0.0.1", port: server.port, ...(username ? { username } : {}) }, target: { host, port: 8080 }, deadlineMs: 2000, guard });

  it("a target name goes as SOCKS4a with the user id, and the tunnel carries data", async () => {
    const socket = await dial("judge.example", "uid42");
    const echoed = await new Promise<string>((resolve, reject) => {
      socket.once("data", (chunk: Buffer) => resolve(chunk.toString()));
      socket.once("error", reject);
      socket.write("ping");
    });
    socket.destroy();
    expect(echoed).toBe("ping");
    expect(server.requests.at(-1)).toEqual({ port: 8080, ip: "0.0.0.1", userId: "uid42", hostname: "judge.example" });
  });

  it("a numeric target goes as plain SOCKS4 with its canonical address", async () => {
    const socket = await dial("0x08080808");
    socket.destroy();
    expect(server.requests.at(-1)).toEqual({ port: 8080, ip: "8.8.8.8", userId: "", hostname: null });
  });

  it("a rejected request is a typed refusal", async () => {
    await expect(dial("refuse.example")).rejects.toMatchObject({ code: "PROXY_REFUSED" });
    await expect(dial("refuse.example")).rejects.toBeInstanceOf(ProxyError);
  });
});
