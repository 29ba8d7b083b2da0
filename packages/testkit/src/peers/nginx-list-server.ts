import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";

import { freePort } from "../wait-for.js";
import { nginxConfig } from "./nginx-config.js";
import { makePeerDir, requirePeerBinary, startPeerProcess } from "./peer-process.js";

export interface NginxListServer {
  host: string;
  port: number;
  /** `http://host:port` without a trailing slash. */
  origin: string;
  /** A URL of this server that answers 302 to `url` (an http URL). */
  redirectTo(url: string): string;
  /** Writes a file served at `/<name>` (ETag and Last-Modified come from nginx's static handler). */
  put(name: string, content: string | Buffer): Promise<void>;
  /** Request paths (with query) nginx has answered so far, with their status and user agent, oldest first. */
  requests(): Promise<{ path: string; status: number; userAgent: string }[]>;
  /** Requests nginx is answering right now (the access log only shows them once answered), from its stub_status. */
  inFlight(): Promise<number>;
  stop(): Promise<void>;
}

export interface NginxListServerOptions {
  /** @defaultValue "127.0.0.10" */
  host?: string;
}

/**
 * nginx serving list files from a temp folder, with an access log the test
 * reads: static files (conditional requests answered with 304), `/slow/<file>`
 * sent at 8 bytes a second (a timeout), `/drip/<file>` at 64 bytes a second
 * (headers count: a short list takes about 4 s, in flight long enough to be
 * waited for, done well within a fetch timeout), `/to/<host:port/path>` answering 302 to
 * `http://<host:port/path>` (redirectTo), and its stub_status (not logged)
 * for inFlight.
 */
export async function startNginxListServer(options: NginxListServerOptions = {}): Promise<NginxListServer> {
  const binary = requirePeerBinary("nginx");
  const host = options.host ?? "127.0.0.10";
  const dir = await makePeerDir("nginx-lists");
  try {
    const port = await freePort();
    const path = (name: string): string => join(dir.path, name);
    const root = path("www");
    await mkdir(root, { mode: 0o777 });
    const config = nginxConfig(dir.path, {
      workerConnections: 256,
      http: [
        "log_format paths '$status $request_uri $http_user_agent';",
        `access_log ${path("access.log")} paths;`,
        "types { text/plain txt; text/html html; application/json json; }",
        "default_type text/plain;",
        "server {",
        `  listen ${host}:${port};`,
        `  root ${root};`,
        "  location /to/ { rewrite ^/to/(.*)$ http://$1 redirect; }",
        `  location /slow/ { alias ${root}/; limit_rate 8; }`,
        `  location /drip/ { alias ${root}/; limit_rate 64; }`,
        "  location = /.status { stub_status; access_log off; }",
        "  location / { }",
        "}",
      ],
    });
    await writeFile(path("nginx.conf"), `${config}\n`);
    await writeFile(path("access.log"), "", { mode: 0o666 });
    const daemon = await startPeerProcess({ name: "nginx", command: binary, args: ["-p", dir.path, "-c", path("nginx.conf"), "-e", path("error.log")], port, host });
    let stopping: Promise<void> | undefined;
    return {
      host,
      port,
      origin: `http://${host}:${port}`,
      redirectTo: (url) => `http://${host}:${port}/to/${url.replace(/^http:\/\//, "")}`,
      put: (name, content) => writeFile(join(root, name), content, { mode: 0o644 }),
      async requests() {
        const text = await readFile(path("access.log"), "utf8");
        return text
          .split("\n")
          .filter((line) => line !== "")
          .map((line) => {
            const [status = "", path = "", ...agent] = line.split(" ");
            return { status: Number(status), path, userAgent: agent.join(" ") };
          });
      },
      async inFlight() {
        const status = await (await fetch(`http://${host}:${port}/.status`)).text();
        const writing = /Writing: (\d+)/.exec(status)?.[1];
        if (writing === undefined) throw new Error(`nginx stub_status unreadable: ${status}`);
        // The status request is being written too.
        return Number(writing) - 1;
      },
      stop: () => (stopping ??= daemon.stop().finally(() => dir.remove())),
    };
  } catch (error) {
    await dir.remove();
    throw error;
  }
}
