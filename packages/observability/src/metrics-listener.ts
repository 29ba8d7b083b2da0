import http from "node:http";
import type { Metrics } from "./metrics.js";

export interface MetricsListener {
  close(): Promise<void>;
}

/** `/metrics` and `/healthz` for a worker run alone: split deployments have no gateway in its process to serve them. */
export async function startMetricsListener(options: {
  metrics: Metrics;
  /** The `/healthz` body besides `status: "ok"` (say the worker's id). */
  health: Record<string, unknown>;
  port: number;
  host: string;
}): Promise<MetricsListener> {
  const { metrics, health } = options;
  const server = http.createServer((req, res) => {
    if (req.url === "/metrics") {
      void metrics.registry.metrics().then((body) => {
        res.writeHead(200, { "Content-Type": metrics.registry.contentType });
        res.end(body);
      });
    } else if (req.url === "/healthz") {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ status: "ok", ...health }));
    } else {
      res.writeHead(404, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ error: "Not found" }));
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return { close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
