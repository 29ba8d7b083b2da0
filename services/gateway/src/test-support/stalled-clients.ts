import net from "node:net";
import type pg from "pg";

/**
 * Raw HTTP clients for tests of what a slow or silent client may hold:
 * requests written by hand on a socket, so a test decides exactly what is
 * sent and when nothing more comes.
 */

/** A connection to 127.0.0.1:`port` that has sent `head` (request line and headers), a blank line and `body`. */
export async function rawRequest(port: number, head: string[], body: string, sockets: net.Socket[]): Promise<net.Socket> {
  const socket = net.connect({ port, host: "127.0.0.1" });
  sockets.push(socket);
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  socket.on("error", () => undefined);
  socket.write([...head, `Host: 127.0.0.1:${port}`, "", body].join("\r\n"));
  return socket;
}

export interface StalledUpload {
  socket: net.Socket;
  /** The server has closed the connection. */
  closed(): boolean;
}

/**
 * A multipart upload whose headers promise a large body, that sends the
 * start of a file part with one full line (`line`) and then nothing more.
 */
export async function stalledUpload(port: number, token: string, line: string, sockets: net.Socket[]): Promise<StalledUpload> {
  const head = ["POST /api/addProxies HTTP/1.1", `Authorization: Bearer ${token}`, "Content-Type: multipart/form-data; boundary=XYZ", "Content-Length: 1000000"];
  const part = ["--XYZ", 'Content-Disposition: form-data; name="file"; filename="p.txt"', "Content-Type: text/plain", "", `${line}\n`];
  const socket = await rawRequest(port, head, part.join("\r\n"), sockets);
  let closed = false;
  socket.on("close", () => (closed = true));
  socket.on("data", () => undefined);
  return { socket, closed: () => closed };
}

/** Connections to the observer's database inside a transaction, the observer's own left out. */
export async function connectionsInTransaction(observer: pg.Client): Promise<number> {
  const { rowCount } = await observer.query(
    "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND xact_start IS NOT NULL AND pid <> pg_backend_pid()",
  );
  return rowCount ?? 0;
}
