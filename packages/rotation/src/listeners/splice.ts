import type net from "node:net";

/**
 * Joins a client and its upstream for a CONNECT or SOCKS tunnel: `early` (bytes
 * the client sent after its request) goes first, then both directions are piped
 * (pipe pauses the faster side: backpressure both ways). Either side closing or
 * failing closes the other, and so does `idleMs` without a byte either way:
 * every byte of the tunnel is read from or written to the client socket, so its
 * own timer sees all traffic.
 */
export function spliceTunnel(client: net.Socket, upstream: net.Socket, early: Buffer, idleMs: number): void {
  upstream.on("error", () => client.destroy());
  client.on("error", () => upstream.destroy());
  client.on("close", () => upstream.destroy());
  upstream.on("close", () => client.destroy());
  client.setTimeout(idleMs, () => client.destroy());
  if (early.length > 0) upstream.write(early);
  client.pipe(upstream);
  upstream.pipe(client);
  client.resume();
}
