import net from "node:net";
import { freePort } from "../wait-for.js";

/** A TCP relay the test takes away and brings back on the same port: a proxy that goes and comes. */
export interface StoppableRelay {
  port: number;
  start(): Promise<void>;
  /** Closes the listener and every relayed connection. */
  stop(): Promise<void>;
  close(): Promise<void>;
}

/** Relays 127.0.0.1:<port> to 127.0.0.1:`targetPort`; stopped until `start()`. */
export async function startRelay(targetPort: number): Promise<StoppableRelay> {
  const port = await freePort();
  const sockets = new Set<net.Socket>();
  let server: net.Server | null = null;
  const relay: StoppableRelay = {
    port,
    async start(): Promise<void> {
      if (server) return;
      const listening = net.createServer((client) => {
        const upstream = net.connect(targetPort, "127.0.0.1");
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on("close", () => sockets.delete(socket));
          socket.on("error", () => undefined);
        }
        client.pipe(upstream).pipe(client);
      });
      await new Promise<void>((resolve) => listening.listen(port, "127.0.0.1", resolve));
      server = listening;
    },
    async stop(): Promise<void> {
      const current = server;
      server = null;
      for (const socket of sockets) socket.destroy();
      if (current) await new Promise<void>((resolve) => current.close(() => resolve()));
    },
    close: () => relay.stop(),
  };
  return relay;
}
