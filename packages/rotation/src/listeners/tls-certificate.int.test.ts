import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { X509Certificate } from "node:crypto";

import { loadTlsCertificate } from "./tls-certificate.js";

describe("the https listener's certificate", () => {
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "roost-rotator-tls-"));
  });

  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it("makes a self-signed pair once and reuses it, or takes the configured files", async () => {
    const [first, twin] = await Promise.all([loadTlsCertificate({ dataDir }), loadTlsCertificate({ dataDir })]);
    expect(twin.cert.equals(first.cert) && twin.key.equals(first.key)).toBe(true);
    const again = await loadTlsCertificate({ dataDir });
    expect(again.cert.equals(first.cert)).toBe(true);
    expect(new X509Certificate(first.cert).subject).toContain("CN=roost-rotator");
    const certFile = join(dataDir, "given-cert.pem");
    const keyFile = join(dataDir, "given-key.pem");
    await writeFile(certFile, "CERT");
    await writeFile(keyFile, "KEY");
    const given = await loadTlsCertificate({ dataDir, certFile, keyFile });
    expect([given.cert.toString(), given.key.toString()]).toEqual(["CERT", "KEY"]);
  });
});
