import { execFile } from "node:child_process";
import { mkdir, readFile, rename } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
}

export interface TlsCertificateOptions {
  certFile?: string | undefined;
  keyFile?: string | undefined;
  /** Where the self-signed pair is kept between restarts. */
  dataDir: string;
}

/**
 * The https listener's certificate: the configured files, else a self-signed
 * pair made once with openssl and kept in `dataDir/rotator-tls`.
 */
export async function loadTlsCertificate(options: TlsCertificateOptions): Promise<TlsMaterial> {
  if (options.certFile && options.keyFile) return { cert: await readFile(options.certFile), key: await readFile(options.keyFile) };
  const dir = join(options.dataDir, "rotator-tls");
  const certFile = join(dir, "cert.pem");
  const keyFile = join(dir, "key.pem");
  try {
    return { cert: await readFile(certFile), key: await readFile(keyFile) };
  } catch {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const suffix = `.${process.pid}.tmp`;
    await run("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "825", "-subj", "/CN=roost-rotator", "-keyout", keyFile + suffix, "-out", certFile + suffix]);
    // Key first: a crash in between leaves a key without a cert, which the next start regenerates.
    await rename(keyFile + suffix, keyFile);
    await rename(certFile + suffix, certFile);
    return { cert: await readFile(certFile), key: await readFile(keyFile) };
  }
}
