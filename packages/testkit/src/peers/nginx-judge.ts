import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";

import { freePort } from "../wait-for.js";
import { makePeerDir, requirePeerBinary, startPeerProcess } from "./peer-process.js";
import { nginxConfig } from "./nginx-config.js";
import { createTestCertificate } from "./test-ca.js";

const ECHO_MODULE = "/usr/lib/nginx/modules/ngx_http_echo_module.so";

export interface NginxJudge {
  /** The loopback address the judge listens on (not 127.0.0.1, so a leaked client address stands out). */
  host: string;
  httpPort: number;
  httpsPort: number;
  /** `http://host:port/judge`: answers `REMOTE_ADDR = <client>` and the request's raw headers. */
  httpUrl: string;
  /** `http://host:port/body`: answers the request body back as it arrived (up to 1 MiB; needs the echo module, else 501). */
  bodyUrl: string;
  httpsUrl: string;
  /** PEM of the CA that signed the https certificate (SAN: the host's IP and localhost). */
  caPem: string;
  caFile: string;
  stop(): Promise<void>;
}

export interface NginxJudgeOptions {
  /** @defaultValue "127.0.0.9" */
  host?: string;
}

/**
 * nginx as an azenv-like judge on http and https. `/judge` echoes the client
 * address and the request headers (echo module; without it, the main headers
 * by name); `/redirect?to=URL` answers 302 to URL.
 */
export async function startNginxJudge(options: NginxJudgeOptions = {}): Promise<NginxJudge> {
  const binary = requirePeerBinary("nginx");
  const host = options.host ?? "127.0.0.9";
  const dir = await makePeerDir("nginx");
  try {
    const httpPort = await freePort();
    const httpsPort = await freePort();
    const cert = await createTestCertificate(dir.path, [host], ["localhost"]);
    const echo = existsSync(ECHO_MODULE);
    const judgeBody = echo
      ? ['echo "REMOTE_ADDR = $remote_addr";', "echo $echo_client_request_headers;"]
      : ['return 200 "REMOTE_ADDR = $remote_addr\\nHTTP_HOST = $http_host\\nHTTP_USER_AGENT = $http_user_agent\\nHTTP_VIA = $http_via\\nHTTP_X_FORWARDED_FOR = $http_x_forwarded_for\\nHTTP_X_TINYPROXY = $http_x_tinyproxy\\n";'];
    const path = (name: string): string => join(dir.path, name);
    const config = nginxConfig(dir.path, {
      modules: echo ? [ECHO_MODULE] : [],
      workerConnections: 512,
      http: [
        "access_log off;",
        "server {",
        `  listen ${host}:${httpPort};`,
        `  listen ${host}:${httpsPort} ssl;`,
        `  ssl_certificate ${cert.certFile};`,
        `  ssl_certificate_key ${cert.keyFile};`,
        "  location = /judge {",
        "    default_type text/plain;",
        ...judgeBody.map((line) => `    ${line}`),
        "  }",
        "  location = /redirect { return 302 $arg_to; }",
        "  location = /body {",
        "    default_type application/octet-stream;",
        "    client_max_body_size 1m;",
        "    client_body_buffer_size 1m;",
        ...(echo ? ["    echo_read_request_body;", "    echo_request_body;"] : ["    return 501;"]),
        "  }",
        "  location / { return 404; }",
        "}",
      ],
    });
    await writeFile(path("nginx.conf"), `${config}\n`);
    const daemon = await startPeerProcess({ name: "nginx", command: binary, args: ["-p", dir.path, "-c", path("nginx.conf"), "-e", path("error.log")], port: httpPort, host });
    let stopping: Promise<void> | undefined;
    return {
      host,
      httpPort,
      httpsPort,
      httpUrl: `http://${host}:${httpPort}/judge`,
      bodyUrl: `http://${host}:${httpPort}/body`,
      httpsUrl: `https://${host}:${httpsPort}/judge`,
      caPem: cert.caPem,
      caFile: cert.caFile,
      stop: () => (stopping ??= daemon.stop().finally(() => dir.remove())),
    };
  } catch (error) {
    await dir.remove();
    throw error;
  }
}
