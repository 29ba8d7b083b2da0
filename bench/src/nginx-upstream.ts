import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { freePort, makePeerDir, nginxConfig, requirePeerBinary, startPeerProcess, type PeerDir, type PeerProcess } from "@roost/testkit";

/**
 * The rotator bench's upstream: an nginx origin serving one small file, and a
 * second nginx in front of it that takes absolute-form requests as an HTTP
 * proxy would and passes them to the origin over kept-alive connections.
 * Each is its own process (one worker), on 127.0.0.1.
 */
export interface NginxUpstream {
  /** The absolute-form URL clients ask for (through any proxy side). */
  url: string;
  originPort: number;
  /** The forward-proxying nginx: the upstream every side uses. */
  proxyPort: number;
  /** Process ids of both nginx masters (for /proc readings of their groups). */
  pids: number[];
  stop(): Promise<void>;
}

/** Generous keep-alive everywhere: no side should pay for reconnects nginx forces. */
const KEEP_ALIVE = ["access_log off;", "keepalive_requests 1000000;", "keepalive_timeout 120s;"];

async function startNginx(dir: PeerDir, port: number, http: string[]): Promise<PeerProcess> {
  const conf = join(dir.path, "nginx.conf");
  await writeFile(conf, `${nginxConfig(dir.path, { workerConnections: 4096, http })}\n`);
  return startPeerProcess({ name: "nginx", command: requirePeerBinary("nginx"), args: ["-p", dir.path, "-c", conf, "-e", join(dir.path, "error.log")], port });
}

export async function startNginxUpstream(bodyBytes: number): Promise<NginxUpstream> {
  const originDir = await makePeerDir("bench-origin");
  const proxyDir = await makePeerDir("bench-upstream");
  const started: PeerProcess[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(started.map((peer) => peer.stop()));
    await Promise.all([originDir.remove(), proxyDir.remove()]);
  };
  try {
    const originPort = await freePort();
    const proxyPort = await freePort();
    const root = join(originDir.path, "www");
    await mkdir(root, { mode: 0o777 });
    await writeFile(join(root, "body"), Buffer.alloc(bodyBytes, 0x78), { mode: 0o644 });
    started.push(await startNginx(originDir, originPort, [...KEEP_ALIVE, "default_type text/plain;", "server {", `  listen 127.0.0.1:${originPort};`, `  root ${root};`, "  location = /body { }", "}"]));
    started.push(
      await startNginx(proxyDir, proxyPort, [
        ...KEEP_ALIVE,
        `upstream origin { server 127.0.0.1:${originPort}; keepalive 256; keepalive_requests 1000000; }`,
        "server {",
        `  listen 127.0.0.1:${proxyPort};`,
        '  location / { proxy_pass http://origin; proxy_http_version 1.1; proxy_set_header Connection ""; }',
        "}",
      ]),
    );
    return { url: `http://127.0.0.1:${originPort}/body`, originPort, proxyPort, pids: started.map((peer) => peer.pid), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
