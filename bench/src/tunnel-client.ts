import net from "node:net";

const HEAD_END = Buffer.from("\r\n\r\n");

/**
 * A CONNECT tunnel to 127.0.0.1:`targetPort` through the HTTP proxy on
 * 127.0.0.1:`proxyPort` (or a plain connection to the target when `proxyPort`
 * is null). Resolves once the proxy answered 200, with bytes that came after
 * its head; rejects on any other answer.
 */
export function openTunnel(proxyPort: number | null, targetPort: number): Promise<{ socket: net.Socket; early: Buffer }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: "127.0.0.1", port: proxyPort ?? targetPort, noDelay: true });
    const fail = (error: Error): void => {
      socket.destroy();
      reject(error);
    };
    socket.once("error", fail);
    socket.once("close", () => fail(new Error("closed before the tunnel opened")));
    const opened = (early: Buffer): void => {
      socket.removeAllListeners("error");
      socket.removeAllListeners("close");
      socket.removeAllListeners("data");
      socket.on("error", () => socket.destroy());
      resolve({ socket, early });
    };
    if (proxyPort === null) return void socket.once("connect", () => opened(Buffer.alloc(0)));
    socket.write(`CONNECT 127.0.0.1:${targetPort} HTTP/1.1\r\nHost: 127.0.0.1:${targetPort}\r\n\r\n`);
    let head = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf(HEAD_END);
      if (end === -1) return;
      const status = head.toString("latin1", 0, Math.min(end, 64));
      if (!/^HTTP\/1\.[01] 200/.test(status)) return fail(new Error(`CONNECT answered ${status.split("\r\n")[0] ?? ""}`));
      socket.pause();
      opened(head.subarray(end + HEAD_END.length));
    });
  });
}

/** Reads a tunnel to its end, counting the bytes (the target closes it after sending). */
export async function drain(proxyPort: number | null, targetPort: number): Promise<number> {
  const { socket, early } = await openTunnel(proxyPort, targetPort);
  return new Promise((resolve, reject) => {
    let bytes = early.length;
    socket.on("data", (chunk: Buffer) => (bytes += chunk.length));
    socket.once("end", () => {
      socket.destroy();
      resolve(bytes);
    });
    socket.once("close", () => resolve(bytes));
    socket.once("error", reject);
    socket.resume();
  });
}
