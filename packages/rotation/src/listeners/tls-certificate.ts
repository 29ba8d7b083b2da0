import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rename, rm } from "node:fs/promises";
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
    // Made in a directory aside and renamed into place whole: processes starting together keep one matching pair.
    await mkdir(options.dataDir, { recursive: true });
    const aside = await mkdtemp(join(options.dataDir, "rotator-tls.tmp-"));
    try {
      await run("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "825", "-subj", "/CN=roost-rotator", "-keyout", join(aside, "key.pem"), "-out", join(aside, "cert.pem")]);
      await rename(aside, dir).catch(() => undefined);
    } finally {
      await rm(aside, { recursive: true, force: true });
    }
    return { cert: await readFile(certFile), key: await readFile(keyFile) };
  }
}
