import { spawnSync } from "node:child_process";

const WRITER_MODULE = "MaxMind::DB::Writer::Tree";

/**
 * True when Debian's libmaxmind-db-writer-perl is installed. Missing, the
 * tests that build MMDB files skip locally and fail under CI=true, so a
 * forgotten apt step cannot pass by skipping.
 */
export function mmdbWriterAvailable(): boolean {
  const probe = spawnSync("perl", [`-M${WRITER_MODULE}`, "-e", "1"], { encoding: "utf8" });
  if (probe.status === 0) return true;
  const message = "perl module MaxMind::DB::Writer::Tree missing (apt-get install libmaxmind-db-writer-perl)";
  if (process.env.CI === "true") throw new Error(message);
  console.warn(`${message}; skipping the tests that need it`);
  return false;
}

export interface TestMmdbRecord {
  /** IPv4 CIDR, e.g. `8.8.8.0/24`. */
  network: string;
  /** MaxMind layout: `{ country: { iso_code } }` or `{ autonomous_system_number, autonomous_system_organization }`. */
  data: Record<string, unknown>;
}

// Reads {database_type, records} as JSON on stdin and writes the MMDB to stdout.
const WRITER_SCRIPT = String.raw`
use strict; use warnings;
use JSON::PP; use MaxMind::DB::Writer::Tree;
local $/; my $spec = decode_json(<STDIN>);
my %types = (country => 'map', iso_code => 'utf8_string',
  autonomous_system_number => 'uint32', autonomous_system_organization => 'utf8_string');
my $tree = MaxMind::DB::Writer::Tree->new(
  ip_version => 6, record_size => 24, database_type => $spec->{database_type},
  languages => ['en'], description => { en => 'Roost test database' },
  map_key_type_callback => sub { $types{ $_[0] } });
$tree->insert_network($_->{network}, $_->{data}) for @{ $spec->{records} };
binmode STDOUT; $tree->write_tree(\*STDOUT);
`;

/** Builds an MMDB file with Debian's MaxMind writer. */
export function writeTestMmdb(databaseType: string, records: TestMmdbRecord[]): Buffer {
  const result = spawnSync("perl", ["-e", WRITER_SCRIPT], { input: JSON.stringify({ database_type: databaseType, records }), maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) throw new Error(`mmdb writer failed: ${result.stderr.toString()}`);
  return result.stdout;
}
