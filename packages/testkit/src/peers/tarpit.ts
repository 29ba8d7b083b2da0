import net from "node:net";

import { freePort } from "../wait-for.js";

export interface Tarpit {
  host: string;
  port: number;
  /** Connections accepted so far. */
  accepted(): number;
  /** Bytes received from all clients (a tarpit never answers). */
  bytesReceived(): number;
  /** Connections still open (a client that gave up has closed its side). */
  openConnections(): number;
  stop(): Promise<void>;
}

/** A server that accepts every connection and never sends a byte: the slowest dead proxy. */
export async function startTarpit(host = "127.0.0.1"): Promise<Tarpit> {
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  let bytes = 0;
  const server = net.createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on("data", (chunk) => (bytes += chunk.length));
    socket.on("error", () => undefined);
    socket.on("end", () => socket.destroy());
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => resolve());
  });
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("tarpit has no port");
  let stopping: Promise<void> | undefined;
  return {
    host,
    port: address.port,
    accepted: () => accepted,
    bytesReceived: () => bytes,
    openConnections: () => sockets.size,
    stop: () =>
      (stopping ??= new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      })),
  };
}

/** A port on `host` where nothing listens (bound once, then released): connects are refused at once. */
export function closedPort(host = "127.0.0.1"): Promise<number> {
  return freePort(host);
}
