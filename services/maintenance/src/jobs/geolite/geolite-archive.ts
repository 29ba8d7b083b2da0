import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { extract } from "tar-stream";

/** Largest .mmdb accepted from an archive (GeoLite2 Country and ASN are a few MB). */
export const MAX_MMDB_BYTES = 128 * 1024 * 1024;

/** A download that cannot be used; the current databases stay. */
export class GeoLiteArchiveError extends Error {
  override readonly name = "GeoLiteArchiveError";
}

export const sha256Hex = (bytes: Buffer): string => createHash("sha256").update(bytes).digest("hex");

/** MaxMind's `.sha256` file: `<hex> <file name>`; the first token is the archive's SHA-256. */
export function parseSha256File(text: string): string {
  const token = text.trim().split(/\s+/)[0] ?? "";
  if (!/^[0-9a-fA-F]{64}$/.test(token)) throw new GeoLiteArchiveError("checksum file does not start with a SHA-256");
  return token.toLowerCase();
}

/** Throws unless `archive` hashes to `expectedHex`. */
export function verifySha256(archive: Buffer, expectedHex: string): void {
  const actual = sha256Hex(archive);
  if (actual !== expectedHex.toLowerCase()) throw new GeoLiteArchiveError(`checksum mismatch: archive ${actual}, published ${expectedHex}`);
}

/**
 * Returns `<edition>.mmdb` from a MaxMind `.tar.gz` (`<edition>_<date>/<edition>.mmdb`,
 * next to licence files). A corrupt archive, or one without that file, throws.
 */
export async function extractMmdb(archive: Buffer, edition: string): Promise<Buffer> {
  const wanted = `${edition}.mmdb`;
  const parser = extract();
  const result: { mmdb: Buffer | null } = { mmdb: null };
  parser.on("entry", (header, stream, next) => {
    const base = header.name.split("/").pop();
    const take = header.type === "file" && base === wanted && result.mmdb === null;
    if (take && header.size !== undefined && header.size > MAX_MMDB_BYTES) {
      parser.destroy(new GeoLiteArchiveError(`${wanted} is larger than ${MAX_MMDB_BYTES} bytes`));
      return;
    }
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: unknown) => {
      if (take && Buffer.isBuffer(chunk)) chunks.push(chunk);
    });
    stream.on("end", () => {
      if (take) result.mmdb = Buffer.concat(chunks);
      next();
    });
    stream.resume();
  });
  try {
    await pipeline(Readable.from([archive]), createGunzip(), parser);
  } catch (error) {
    if (error instanceof GeoLiteArchiveError) throw error;
    throw new GeoLiteArchiveError(`corrupt archive: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  if (result.mmdb === null) throw new GeoLiteArchiveError(`archive holds no ${wanted}`);
  return result.mmdb;
}
