import { randomUUID } from "node:crypto";
import path from "node:path";
import { createInterface } from "node:readline";
import { Writable } from "node:stream";
import { parseArgs } from "node:util";
import { ConfigError } from "@roost/config";
import { embeddedPostgresUrl, localRedisUrl } from "@roost/embedded";
import { createDatabase, migrate } from "@roost/db";
import { createLogger, createMetrics } from "@roost/observability";
import { createRedisConnection } from "@roost/queue";
import { gatewayConfigFromEnv, type GatewayConfig } from "../config/gateway.config.js";
import { buildGatewayDeps } from "../gateway.wiring.js";
import { adminCliConfigFromEnv } from "./admin-cli.config.js";
import { AdminCommandError, createAdminAccount, promoteToAdmin } from "./admin.commands.js";

/**
 * `npm run admin -- create --email E` (password from ADMIN_PASSWORD or stdin) and
 * `npm run admin -- promote --email E`, against the database and Redis the
 * gateway uses (same environment variables, read through the gateway config).
 * Exit codes: 0 done, 1 failed (message on stderr), 2 usage error.
 */

const USAGE = `Usage:
  npm run admin -- create --email <email>    create an admin account; the password comes from
                                             ADMIN_PASSWORD or the first line of standard input
  npm run admin -- promote --email <email>   make an existing account admin (revokes its sessions)

Reads DATABASE_URL, REDIS_URL, QUEUE_PREFIX and DATA_DIR like the gateway.`;

/** The whole command, bounded: a server that stops answering must not leave the CLI hanging. */
const DEADLINE_MS = 60_000;
const REDIS_PING_TIMEOUT_MS = 3_000;

class UsageError extends Error {}

type Command = { name: "create"; email: string } | { name: "promote"; email: string };

/**
 * `create`'s password: ADMIN_PASSWORD, else the first line of standard input
 * (typed without echo on a terminal). Empty is a usage error.
 */
async function readPassword(): Promise<string> {
  const fromEnv = adminCliConfigFromEnv().ADMIN_PASSWORD;
  if (fromEnv !== undefined) return fromEnv;
  const terminal = process.stdin.isTTY;
  if (terminal) process.stderr.write("Password: ");
  // Output to a sink: what is typed is not echoed.
  const lines = createInterface({ input: process.stdin, output: new Writable({ write: (_chunk, _encoding, done) => done() }), terminal });
  let password = "";
  for await (const line of lines) {
    password = line;
    break;
  }
  lines.close();
  if (terminal) process.stderr.write("\n");
  if (password === "") throw new UsageError("create: no password: set ADMIN_PASSWORD or write it on standard input");
  return password;
}

function parseCommand(argv: string[]): Command {
  let values: { email?: string; password?: string; help?: boolean };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      options: { email: { type: "string" }, password: { type: "string" }, help: { type: "boolean", short: "h" } },
      allowPositionals: true,
      strict: true,
    }));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  if (values.help) throw new UsageError("");
  const [name, ...extra] = positionals;
  if (extra.length > 0) throw new UsageError(`unexpected argument: ${extra.join(" ")}`);
  if (!values.email) throw new UsageError(name ? `${name}: --email is required` : "a command is required");
  if (values.password !== undefined) {
    throw new UsageError("--password is not accepted (ps and shell history would show it): set ADMIN_PASSWORD or write the password on standard input");
  }
  if (name === "create") return { name, email: values.email };
  if (name === "promote") return { name, email: values.email };
  throw new UsageError(name ? `unknown command: ${name}` : "a command is required");
}

/**
 * Where the database is: DATABASE_URL, else the embedded PostgreSQL that
 * `npm start` keeps under DATA_DIR (it must be running).
 */
async function databaseUrlOf(config: GatewayConfig): Promise<string> {
  if (config.DATABASE_URL) return config.DATABASE_URL;
  const embedded = await embeddedPostgresUrl(path.resolve(config.DATA_DIR));
  if (embedded) return embedded;
  throw new AdminCommandError(
    `DATABASE_URL is not set and no embedded PostgreSQL was ever started in DATA_DIR (${config.DATA_DIR}): start Roost once with npm start, or set DATABASE_URL (and REDIS_URL) to the values of the running instance.`,
  );
}

async function redisUrlOf(config: GatewayConfig): Promise<string> {
  if (config.REDIS_URL) return config.REDIS_URL;
  const local = await localRedisUrl(path.resolve(config.DATA_DIR));
  if (local) return local;
  throw new AdminCommandError(
    `REDIS_URL is not set and no local redis-server was ever started in DATA_DIR (${config.DATA_DIR}): start Roost with npm start, or set REDIS_URL to the value of the running instance (promotion revokes sessions there).`,
  );
}

async function assertRedisReachable(url: string): Promise<void> {
  const probe = createRedisConnection(url, "producer", { lazyConnect: true, connectTimeout: REDIS_PING_TIMEOUT_MS, retryStrategy: () => null });
  try {
    await probe.connect();
    await probe.ping();
  } catch (error) {
    throw new AdminCommandError(`cannot reach Redis (is Roost running?): ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    probe.disconnect();
  }
}

async function run(command: Command, password: string): Promise<string> {
  const config = gatewayConfigFromEnv();
  const databaseUrl = await databaseUrlOf(config);
  const redisUrl = await redisUrlOf(config);
  await assertRedisReachable(redisUrl);
  try {
    await migrate(databaseUrl);
  } catch (error) {
    throw new AdminCommandError(`cannot prepare the database (is Roost running?): ${error instanceof Error ? error.message : String(error)}`);
  }
  const logger = createLogger({ level: "warn", stream: process.stderr });
  const db = createDatabase({ databaseUrl, applicationName: "roost-admin-cli", maxConnections: 2 });
  try {
    const { deps, close } = await buildGatewayDeps(config, {
      db,
      redisUrl,
      logger,
      metrics: createMetrics({ defaultMetrics: false }),
      build: { buildVersion: "admin-cli", builtAt: new Date().toISOString() },
      instanceId: `admin-cli-${randomUUID()}`,
    });
    try {
      if (command.name === "create") {
        const { userId, email } = await createAdminAccount(deps, command.email, password);
        return `Created admin ${email} (user id ${userId}).`;
      }
      const { userId, email, alreadyAdmin } = await promoteToAdmin(deps, command.email);
      return alreadyAdmin
        ? `${email} (user id ${userId}) is already an admin; nothing changed.`
        : `Promoted ${email} (user id ${userId}) to admin; their existing sessions were revoked, they must log in again.`;
    } finally {
      await close();
    }
  } finally {
    await db.close();
  }
}

async function main(argv: string[]): Promise<number> {
  let command: Command;
  let password = "";
  try {
    command = parseCommand(argv);
    if (command.name === "create") password = await readPassword();
  } catch (error) {
    const message = error instanceof Error ? error.message : "";
    process.stderr.write(message ? `admin: ${message}\n\n${USAGE}\n` : `${USAGE}\n`);
    return message ? 2 : 0;
  }
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new AdminCommandError(`no answer within ${DEADLINE_MS / 1000} s from the database or Redis`)), DEADLINE_MS);
  });
  try {
    process.stdout.write(`${await Promise.race([run(command, password), deadline])}\n`);
    return 0;
  } catch (error) {
    const known = error instanceof AdminCommandError || error instanceof ConfigError;
    process.stderr.write(`admin: ${known || !(error instanceof Error) ? String(error instanceof Error ? error.message : error) : error.stack}\n`);
    return 1;
  } finally {
    clearTimeout(timer);
  }
}

// Exits explicitly: a connection that is still closing must not keep the CLI alive.
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  () => process.exit(1),
);
