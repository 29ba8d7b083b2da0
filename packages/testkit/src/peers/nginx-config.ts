import { join } from "node:path";

/**
 * A whole nginx.conf for a test-owned nginx in `dir`: foreground, one worker,
 * pid, error log and every temp path inside `dir` (writable by its workers),
 * around the given `http { ... }` lines.
 */
export function nginxConfig(dir: string, options: { modules?: readonly string[]; workerConnections: number; http: readonly string[] }): string {
  const path = (name: string): string => join(dir, name);
  return [
    ...(options.modules ?? []).map((module) => `load_module ${module};`),
    "daemon off;",
    "worker_processes 1;",
    `pid ${path("nginx.pid")};`,
    `error_log ${path("error.log")} warn;`,
    `events { worker_connections ${options.workerConnections}; }`,
    "http {",
    `  client_body_temp_path ${path("client_body")};`,
    `  proxy_temp_path ${path("proxy")};`,
    `  fastcgi_temp_path ${path("fastcgi")};`,
    `  uwsgi_temp_path ${path("uwsgi")};`,
    `  scgi_temp_path ${path("scgi")};`,
    ...options.http.map((line) => `  ${line}`),
    "}",
  ].join("\n");
}
