import { buffer as collect } from "node:stream/consumers";
import { createGzip } from "node:zlib";
import { pack } from "tar-stream";

/** A `.tar.gz` laid out as MaxMind ships it: `<edition>_<date>/` holding the .mmdb and licence files. */
export async function buildMaxMindArchive(edition: string, mmdb: Buffer, date = "20261120"): Promise<Buffer> {
  const archive = pack();
  archive.entry({ name: `${edition}_${date}/COPYRIGHT.txt` }, "Test data, not MaxMind's.\n");
  archive.entry({ name: `${edition}_${date}/${edition}.mmdb` }, mmdb);
  archive.finalize();
  return collect(archive.pipe(createGzip()));
}
