import http from "node:http";
import { freePort } from "../wait-for.js";

/** A judge the test stops and starts on the same port. */
export interface EchoJudge {
  /** `http://127.0.0.1:<port>/judge` */
  url: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  close(): Promise<void>;
}

/** An http judge on a fixed port that echoes the request's headers (azenv-like), stopped and started by the test. */
export async function startEchoJudge(): Promise<EchoJudge> {
  const port = await freePort();
  let server: http.Server | null = null;
  const judge: EchoJudge = {
    url: `http://127.0.0.1:${port}/judge`,
    async start(): Promise<void> {
      const listening = http.createServer((req, res) => {
        const lines = [`REMOTE_ADDR = ${req.socket.remoteAddress ?? ""}`, ...Object.entries(req.headers).map(([name, value]) => `HTTP_${name.toUpperCase().replaceAll("-", "_")} = ${String(value)}`)];
        res.writeHead(200, { "content-type": "text/plain" });
        res.end(lines.join("\n"));
      });
      await new Promise<void>((resolve) => listening.listen(port, "127.0.0.1", resolve));
      server = listening;
    },
    async stop(): Promise<void> {
      const current = server;
      server = null;
      if (current) {
        current.closeAllConnections();
        await new Promise<void>((resolve) => current.close(() => resolve()));
      }
    },
    close: () => judge.stop(),
  };
  await judge.start();
  return judge;
}

