import { gzipSync } from "node:zlib";
import { extractMmdb, GeoLiteArchiveError, parseSha256File, sha256Hex, verifySha256 } from "./geolite-archive.js";
import { buildMaxMindArchive } from "./geolite.test-support.js";

describe("GeoLite archives", () => {
  const mmdb = Buffer.from("not really an mmdb, the tar reader does not care\n".repeat(300));

  it("finds <edition>.mmdb inside <edition>_<date>/ next to the licence files", async () => {
    const archive = await buildMaxMindArchive("GeoLite2-ASN", mmdb);
    expect((await extractMmdb(archive, "GeoLite2-ASN")).equals(mmdb)).toBe(true);
  });

  it("refuses an archive without the edition's file", async () => {
    const archive = await buildMaxMindArchive("GeoLite2-ASN", mmdb);
    await expect(extractMmdb(archive, "GeoLite2-Country")).rejects.toThrow(/holds no GeoLite2-Country\.mmdb/);
  });

  it("refuses bytes that are not gzip, a gzip that is not tar, and a truncated archive", async () => {
    const archive = await buildMaxMindArchive("GeoLite2-Country", mmdb);
    for (const broken of [Buffer.from("<html>not found</html>"), gzipSync(Buffer.from("plain text, no tar header".repeat(40))), archive.subarray(0, archive.length - 100)]) {
      await expect(extractMmdb(broken, "GeoLite2-Country")).rejects.toBeInstanceOf(GeoLiteArchiveError);
    }
  });
});

describe("GeoLite checksums", () => {
  const archive = Buffer.from("archive bytes");
  const hex = sha256Hex(archive);

  it("reads the first token of MaxMind's .sha256 file", () => {
    expect(parseSha256File(`${hex}  GeoLite2-Country_20261120.tar.gz\n`)).toBe(hex);
    expect(parseSha256File(hex.toUpperCase())).toBe(hex);
  });

  it("refuses a file that does not start with a SHA-256", () => {
    for (const text of ["", "Invalid license key", `${hex.slice(1)} file.tar.gz`, `${hex}0`]) {
      expect(() => parseSha256File(text)).toThrow(GeoLiteArchiveError);
    }
  });

  it("accepts the matching archive and refuses any other", () => {
    expect(() => verifySha256(archive, hex)).not.toThrow();
    expect(() => verifySha256(Buffer.from("archive bytez"), hex)).toThrow(/checksum mismatch/);
  });
});
