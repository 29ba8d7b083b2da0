import net from "node:net";

/**
 * Polls `check` until it returns a truthy value or the deadline passes.
 * Tests wait on conditions, never on fixed sleeps.
 */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 25, what = "condition" }: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const detail = lastError instanceof Error ? `: ${lastError.message}` : "";
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Ports this process handed out: the kernel may offer a closed port again at once, and two peers would then share it. */
const handedOut = new Set<number>();

/** A free TCP port on 127.0.0.1 (bound and released), never one this process handed out before. */
export async function freePort(host = "127.0.0.1"): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = net.createServer();
      server.unref();
      server.on("error", reject);
      server.listen(0, host, () => {
        const address = server.address();
        server.close(() => {
          if (address && typeof address === "object") resolve(address.port);
          else reject(new Error("no port"));
        });
      });
    });
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}

/** Resolves when a TCP connect to host:port succeeds, within the deadline. */
export async function waitForPort(port: number, host = "127.0.0.1", timeoutMs = 10_000): Promise<void> {
  await waitFor(
    () =>
      new Promise<boolean>((resolve) => {
        const socket = net.connect({ port, host });
        socket.once("connect", () => {
          socket.destroy();
          resolve(true);
        });
        socket.once("error", () => resolve(false));
      }),
    { timeoutMs, what: `${host}:${port} to accept connections` },
  );
}
