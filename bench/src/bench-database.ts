import { randomBytes } from "node:crypto";
import pg from "pg";
import { migrate } from "@roost/db";

/**
 * The benchmark's own database on the local server: created, migrated with
 * the project's runner, seeded with generate_series, dropped at the end.
 */
export interface BenchDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

async function withAdmin<T>(adminUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl, application_name: "roost-bench" });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Databases of interrupted runs (named roost_bench_<epoch seconds>_<hex>) older than this are dropped. */
const STALE_AFTER_SEC = 6 * 3600;

export async function createBenchDatabase(adminUrl: string): Promise<BenchDatabase> {
  const now = Math.floor(Date.now() / 1000);
  const name = `roost_bench_${now}_${randomBytes(4).toString("hex")}`;
  await withAdmin(adminUrl, async (admin) => {
    const { rows } = await admin.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'roost\\_bench\\_%'");
    for (const { datname } of rows) {
      const created = Number(datname.split("_")[2]);
      if (Number.isFinite(created) && created < now - STALE_AFTER_SEC) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    }
    await admin.query(`CREATE DATABASE "${name}"`);
  });
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  await migrate(url.toString());
  return {
    name,
    url: url.toString(),
    async drop() {
      await withAdmin(adminUrl, (admin) => admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    },
  };
}

/**
 * First octets of the generated addresses: public unicast ranges only, so an
 * upload of the same addresses is never refused as reserved. 64 entries:
 * `i % 64` picks the octet, a bijection of `i / 64` the other three, so every
 * generated address is distinct for i < 2^30.
 */
export const FIRST_OCTETS = [
  23, 31, 37, 45, 46, 51, 62, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 91, 92, 93, 94, 95, 103, 104, 109, 128, 129, 130,
  131, 134, 137, 138, 139, 141, 142, 143, 145, 146, 147, 148, 149, 151, 152, 153, 154, 155, 156, 157, 158, 159, 160, 161, 162, 163,
  164, 165, 166, 167, 168, 170, 171,
] as const;

/** Odd multiplier: `x * SPREAD mod 2^24` permutes the lower 24 bits, spreading addresses over the space. */
const SPREAD = 40503;

/** The i-th generated address (i >= 0), the same formula as the SQL seed. */
export function generatedIp(i: number): string {
  const octet = FIRST_OCTETS[i % 64] ?? 23;
  const rest = (Math.floor(i / 64) * SPREAD) % 16_777_216;
  return `${octet}.${(rest >> 16) & 255}.${(rest >> 8) & 255}.${rest & 255}`;
}

export const COUNTRIES = ["US", "DE", "FR", "GB", "NL", "RU", "CN", "BR", "IN", "JP", "CA", "SG", "KR", "ID", "VN", "TR", "PL", "UA", "IT", "ES", "N/A"];

/**
 * `count` proxies for `userId` in one statement, shaped like a checked list:
 * ~30% alive, 21 countries, four types and reputation labels, response
 * times, anonymity and check times derived from a hash of the row number.
 */
export async function seedProxies(pool: pg.Pool, userId: number, count: number): Promise<void> {
  await pool.query(
    `INSERT INTO proxies (user_id, ip, port, country, estimated_type, alive, alive_protocols, response_time, anonymity_level,
                          attempt, reputation_label, reputation_score, latest_check, next_check_at)
     SELECT $1,
            ($2::int[])[1 + s.i % 64] || '.' || ((s.rest >> 16) & 255) || '.' || ((s.rest >> 8) & 255) || '.' || (s.rest & 255),
            1024 + (s.i * 7) % 60000,
            ($3::text[])[1 + (s.h % 21)::int],
            (ARRAY['datacenter', 'residential', 'mobile', 'unknown'])[1 + ((s.h / 21) % 4)::int],
            s.alive,
            CASE WHEN s.alive THEN 1 + (s.h % 15)::int ELSE 0 END,
            CASE WHEN s.alive THEN 50 + (s.h % 5000)::int ELSE 0 END,
            CASE WHEN s.alive THEN (ARRAY['elite', 'anonymous', 'transparent'])[1 + (s.h % 3)::int] ELSE 'N/A' END,
            CASE WHEN s.alive THEN (s.h % 3)::int END,
            (ARRAY['good', 'neutral', 'poor', 'unknown'])[1 + ((s.h / 7) % 4)::int],
            ((s.h % 1000) / 10.0)::real,
            now() - make_interval(secs => (s.h % 86400)::int),
            now() + make_interval(secs => (s.h % 3600)::int)
       FROM (SELECT g.i,
                    ((g.i / 64)::bigint * ${SPREAD} % 16777216)::int AS rest,
                    (g.i::bigint * 2654435761 % 4294967296) AS h,
                    (g.i::bigint * 2654435761 % 4294967296) % 10 < 3 AS alive
               FROM generate_series(0, $4::int - 1) AS g(i)) AS s`,
    [userId, FIRST_OCTETS, COUNTRIES, count],
  );
  // Autovacuum would get here eventually; the benchmark should not measure its timing.
  await pool.query("VACUUM ANALYZE proxies");
  await pool.query("VACUUM ANALYZE user_proxy_counts");
}
