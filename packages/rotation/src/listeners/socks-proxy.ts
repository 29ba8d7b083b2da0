import net from "node:net";

import { TunnelError, type UpstreamConnector } from "../upstream-connector.js";
import type { UsernameOptions } from "../username-options.js";
import { authenticate, type ListenerAuth } from "./client-auth.js";
import { spliceTunnel } from "./splice.js";

export interface SocksProxyDeps {
  version: 4 | 5;
  auth: ListenerAuth;
  connector: UpstreamConnector;
  /** Greeting, auth and request must arrive within this, in ms. @defaultValue 10000 */
  handshakeTimeoutMs?: number;
  /** A tunnel without a byte either way for this long is closed, in ms. */
  tunnelIdleTimeoutMs: number;
  track: (socket: net.Socket) => void;
  onRequest?: (kind: "tunnel") => void;
}

// SOCKS5 reply codes (RFC 1928 section 6).
const REP = { succeeded: 0, failure: 1, notAllowed: 2, hostUnreachable: 4, refused: 5, commandNotSupported: 7, addressNotSupported: 8 } as const;
const SOCKS5_REP_FOR: Record<TunnelError["reason"], number> = { no_upstream: REP.failure, upstream_failed: REP.failure, target_refused: REP.hostUnreachable, target_blocked: REP.notAllowed, bad_target: REP.addressNotSupported };

class HandshakeError extends Error {}

/** Reads exact byte counts from a socket during the handshake. */
class HandshakeReader {
  private buffer: Buffer = Buffer.alloc(0);
  private waiting: (() => void) | undefined;
  private failed: Error | undefined;

  constructor(private readonly socket: net.Socket) {
    socket.on("data", this.onData);
    socket.once("close", () => this.fail(new HandshakeError("closed")));
    socket.once("error", (error) => this.fail(error));
  }

  private readonly onData = (chunk: Buffer): void => {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    this.waiting?.();
  };

  private fail(error: Error): void {
    this.failed ??= error;
    this.waiting?.();
  }

  async read(length: number): Promise<Buffer> {
    while (this.buffer.length < length) {
      if (this.failed) throw this.failed;
      await new Promise<void>((resolve) => (this.waiting = resolve));
      this.waiting = undefined;
    }
    const out = this.buffer.subarray(0, length);
    this.buffer = this.buffer.subarray(length);
    return out;
  }

  async byte(): Promise<number> {
    return (await this.read(1))[0] ?? 0;
  }

  /** Bytes up to a NUL (SOCKS4 user id and 4a host), at most 255. */
  async cString(): Promise<string> {
    const bytes: number[] = [];
    for (let b = await this.byte(); b !== 0; b = await this.byte()) {
      if (bytes.length >= 255) throw new HandshakeError("field too long");
      bytes.push(b);
    }
    return Buffer.from(bytes).toString("latin1");
  }

  /** Stops reading and hands back what arrived after the handshake. */
  release(): Buffer {
    this.socket.off("data", this.onData);
    this.socket.pause();
    return this.buffer;
  }
}

async function socks5(deps: SocksProxyDeps, client: net.Socket, reader: HandshakeReader, handshakeDone: () => void): Promise<void> {
  const methodCount = await reader.byte();
  const methods = await reader.read(methodCount);
  // Without required auth, username/password is still preferred: the username carries the options.
  const useCredentials = methods.includes(2) || deps.auth.required;
  if (useCredentials && !methods.includes(2)) {
    client.end(Buffer.from([5, 0xff]));
    return;
  }
  if (!useCredentials && !methods.includes(0)) {
    client.end(Buffer.from([5, 0xff]));
    return;
  }
  client.write(Buffer.from([5, useCredentials ? 2 : 0]));
  let options: UsernameOptions | undefined;
  if (useCredentials) {
    // RFC 1929: VER=1, ULEN, UNAME, PLEN, PASSWD.
    if ((await reader.byte()) !== 1) throw new HandshakeError("bad auth version");
    const username = (await reader.read(await reader.byte())).toString("utf8");
    const password = (await reader.read(await reader.byte())).toString("utf8");
    options = authenticate(deps.auth, username, password);
    if (!options) {
      client.end(Buffer.from([1, 1]));
      return;
    }
    client.write(Buffer.from([1, 0]));
  } else {
    options = authenticate(deps.auth, undefined, undefined);
    if (!options) {
      client.end(Buffer.from([5, REP.notAllowed, 0, 1, 0, 0, 0, 0, 0, 0]));
      return;
    }
  }
  const [version, command, , addressType] = await reader.read(4);
  if (version !== 5) throw new HandshakeError("bad request version");
  let host: string;
  if (addressType === 1) host = Array.from(await reader.read(4)).join(".");
  else if (addressType === 3) host = (await reader.read(await reader.byte())).toString("latin1");
  else if (addressType === 4) host = formatIpv6(await reader.read(16));
  else {
    client.end(Buffer.from([5, REP.addressNotSupported, 0, 1, 0, 0, 0, 0, 0, 0]));
    return;
  }
  const port = (await reader.read(2)).readUInt16BE(0);
  if (command !== 1) {
    client.end(Buffer.from([5, REP.commandNotSupported, 0, 1, 0, 0, 0, 0, 0, 0]));
    return;
  }
  handshakeDone();
  deps.onRequest?.("tunnel");
  let tunnel;
  try {
    tunnel = await deps.connector.open({ host, port }, options);
  } catch (error) {
    client.end(Buffer.from([5, error instanceof TunnelError ? SOCKS5_REP_FOR[error.reason] : REP.failure, 0, 1, 0, 0, 0, 0, 0, 0]));
    return;
  }
  deps.track(tunnel.socket);
  if (client.destroyed) return void tunnel.socket.destroy();
  // The bound address is the upstream's concern; clients ignore it for CONNECT.
  client.write(Buffer.from([5, REP.succeeded, 0, 1, 0, 0, 0, 0, 0, 0]));
  spliceTunnel(client, tunnel.socket, reader.release(), deps.tunnelIdleTimeoutMs);
}

function formatIpv6(bytes: Buffer): string {
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(bytes.readUInt16BE(i).toString(16));
  return groups.join(":");
}

async function socks4(deps: SocksProxyDeps, client: net.Socket, reader: HandshakeReader, handshakeDone: () => void): Promise<void> {
  const [command] = await reader.read(1);
  const port = (await reader.read(2)).readUInt16BE(0);
  const ip = await reader.read(4);
  const userId = await reader.cString();
  // SOCKS4a: 0.0.0.x with x != 0 means a host name follows the user id.
  const host = ip[0] === 0 && ip[1] === 0 && ip[2] === 0 && ip[3] !== 0 ? await reader.cString() : Array.from(ip).join(".");
  const reject = (): void => void client.end(Buffer.from([0, 0x5b, 0, 0, 0, 0, 0, 0]));
  // SOCKS4 has no password field: with auth required the user id is `<username>:<password>`.
  const colon = userId.indexOf(":");
  const options = deps.auth.required && colon !== -1 ? authenticate(deps.auth, userId.slice(0, colon), userId.slice(colon + 1)) : authenticate(deps.auth, userId, undefined);
  if (!options || command !== 1) return reject();
  handshakeDone();
  deps.onRequest?.("tunnel");
  let tunnel;
  try {
    tunnel = await deps.connector.open({ host, port }, options);
  } catch {
    return reject();
  }
  deps.track(tunnel.socket);
  if (client.destroyed) return void tunnel.socket.destroy();
  client.write(Buffer.from([0, 0x5a, 0, 0, 0, 0, 0, 0]));
  spliceTunnel(client, tunnel.socket, reader.release(), deps.tunnelIdleTimeoutMs);
}

/** Serves one SOCKS client: handshake within a deadline, then a spliced tunnel. */
export function handleSocksClient(deps: SocksProxyDeps, client: net.Socket): void {
  deps.track(client);
  client.setNoDelay(true);
  client.on("error", () => client.destroy());
  const reader = new HandshakeReader(client);
  const timer = setTimeout(() => client.destroy(), deps.handshakeTimeoutMs ?? 10_000);
  void (async () => {
    try {
      const version = await reader.byte();
      if (version !== deps.version) return void client.destroy();
      const handshakeDone = (): void => clearTimeout(timer);
      if (version === 5) await socks5(deps, client, reader, handshakeDone);
      else await socks4(deps, client, reader, handshakeDone);
    } catch {
      client.destroy();
    } finally {
      clearTimeout(timer);
    }
  })();
}
