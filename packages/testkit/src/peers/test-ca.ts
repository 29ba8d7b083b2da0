import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

import { requirePeerBinary } from "./peer-process.js";

const run = promisify(execFile);

export interface TestCertificate {
  /** PEM of the test CA: trust it with `ca` (or NODE_EXTRA_CA_CERTS for child processes). */
  caPem: string;
  caFile: string;
  certFile: string;
  keyFile: string;
}

/**
 * A throwaway CA and a server certificate it signed for `ipAddresses` and
 * `dnsNames`, written into `dir` with openssl (P-256 keys, valid two days).
 */
export async function createTestCertificate(dir: string, ipAddresses: readonly string[], dnsNames: readonly string[] = ["localhost"]): Promise<TestCertificate> {
  const openssl = requirePeerBinary("openssl");
  const file = (name: string): string => join(dir, name);
  const ecKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  await run(openssl, ["req", "-x509", ...ecKey, "-keyout", file("ca.key"), "-out", file("ca.pem"), "-days", "2", "-subj", "/CN=Roost test CA",
    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]);
  await run(openssl, ["req", ...ecKey, "-keyout", file("server.key"), "-out", file("server.csr"), "-subj", `/CN=${dnsNames[0] ?? ipAddresses[0] ?? "test"}`]);
  const altNames = [...ipAddresses.map((ip) => `IP:${ip}`), ...dnsNames.map((name) => `DNS:${name}`)].join(",");
  await writeFile(file("server.ext"), `subjectAltName=${altNames}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`);
  await run(openssl, ["x509", "-req", "-in", file("server.csr"), "-CA", file("ca.pem"), "-CAkey", file("ca.key"), "-CAcreateserial",
    "-out", file("server.pem"), "-days", "2", "-extfile", file("server.ext")]);
  return { caPem: await readFile(file("ca.pem"), "utf8"), caFile: file("ca.pem"), certFile: file("server.pem"), keyFile: file("server.key") };
}
