import { createServer } from "node:net";

import { errorCode } from "./process-probe.js";

/** Ports that real servers on the machine may hold; embedded servers never take them. */
export const WELL_KNOWN_SERVER_PORTS: readonly number[] = [5432, 6379];

/** True when nothing listens on 127.0.0.1:`port` right now. */
export async function isLoopbackPortFree(port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", (error) => {
      const code = errorCode(error);
      if (code === "EADDRINUSE" || code === "EACCES") resolve(false);
      else reject(error);
    });
    server.listen({ host: "127.0.0.1", port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A port the kernel reports free on 127.0.0.1, never one of WELL_KNOWN_SERVER_PORTS. */
export async function pickFreeLoopbackPort(): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.unref();
      server.once("error", reject);
      server.listen({ host: "127.0.0.1", port: 0, exclusive: true }, () => {
        const address = server.address();
        const chosen = typeof address === "object" && address !== null ? address.port : 0;
        server.close(() => resolve(chosen));
      });
    });
    if (port > 0 && !WELL_KNOWN_SERVER_PORTS.includes(port)) return port;
  }
  throw new Error("could not find a free port on 127.0.0.1");
}
