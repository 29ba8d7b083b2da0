import { limitTransactionWaits, type DbHandle, type PrismaClient, type User } from "@roost/db";
import type { Role } from "@roost/auth";
import type { GlobalConfig } from "@roost/global-config";
import { createDefaultSettings } from "../user-settings/user-settings.repository.js";

/** Serialises registrations so "first user" is decided by exactly one transaction. */
const REGISTRATION_LOCK = 7370_0001;

/**
 * Longest a registration waits for that lock, in ms; past it PostgreSQL ends
 * the wait (lock_not_available) and the request answers 503. Each holder
 * keeps it for a few milliseconds, so only a stuck holder or a flood gets near.
 */
export const REGISTRATION_LOCK_WAIT_MS = 8_000;
/** Any one statement of a registration (the lock wait included), ms; above the lock wait so the two are told apart. */
const REGISTRATION_STATEMENT_TIMEOUT_MS = REGISTRATION_LOCK_WAIT_MS + 1_000;

export interface RegistrationPolicy {
  disablePublicRegistration: boolean;
  enablePublicFirstAdminBootstrap: boolean;
}

export type CreateAccountResult =
  | { kind: "created"; userId: number; role: Role }
  | { kind: "closed" }
  | { kind: "duplicate" };

/**
 * Creates a user with default settings. Under a transaction-scoped advisory
 * lock, "the users table is empty" is a fact no concurrent registration can
 * change, so concurrent first registrations yield exactly one admin.
 * `policy` null means the admin CLI: always allowed, role as given.
 */
export async function createAccount(
  prisma: PrismaClient,
  input: { email: string; passwordHash: string; config: GlobalConfig; policy: RegistrationPolicy | null; role?: Role },
): Promise<CreateAccountResult> {
  return prisma.$transaction(async (tx) => {
    await limitTransactionWaits(tx, REGISTRATION_STATEMENT_TIMEOUT_MS, REGISTRATION_LOCK_WAIT_MS);
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(${REGISTRATION_LOCK})`;
    const anyUser = await tx.user.findFirst({ select: { id: true } });
    const first = anyUser === null;
    // Closed is answered before duplicate, so a closed instance does not tell which e-mails have accounts.
    if (input.policy) {
      const open = first ? input.policy.enablePublicFirstAdminBootstrap : !input.policy.disablePublicRegistration;
      if (!open) return { kind: "closed" as const };
    }
    const existing = await tx.user.findUnique({ where: { email: input.email }, select: { id: true } });
    if (existing) return { kind: "duplicate" as const };
    const role: Role = input.role ?? (first ? "admin" : "user");
    const user = await tx.user.create({ data: { email: input.email, passwordHash: input.passwordHash, role } });
    await createDefaultSettings(tx, user.id, input.config);
    return { kind: "created" as const, userId: user.id, role };
    // Prisma's defaults (2 s to start, 5 s in all) expired transactions that were only waiting
    // their turn for the lock: PostgreSQL's explicit limits above decide instead, and the pool's
    // connect timeout (5 s) bounds the start.
  }, { maxWait: 5_000, timeout: REGISTRATION_STATEMENT_TIMEOUT_MS + 5_000 });
}

export function findUserByEmail(db: DbHandle, email: string): Promise<User | null> {
  return db.user.findUnique({ where: { email } });
}

export function findUserById(db: DbHandle, id: number): Promise<User | null> {
  return db.user.findUnique({ where: { id } });
}

/** Sets the user's password hash; false when the account is gone (deleted concurrently). */
export async function setUserPasswordHash(tx: DbHandle, userId: number, passwordHash: string): Promise<boolean> {
  const { count } = await tx.user.updateMany({ where: { id: userId }, data: { passwordHash } });
  return count === 1;
}

/**
 * Removes the account now; its bulk rows (proxies, sources, statistics) are
 * removed afterwards in batches by the maintenance queue, so the request
 * finishes in bounded time however much the user owns. The `users` row goes
 * first, so the only lock the deletion waits for is that row's (an upload
 * holds it). False when the account is already gone (a concurrent deletion).
 */
export async function deleteAccountRows(tx: DbHandle, userId: number): Promise<boolean> {
  const { count } = await tx.user.deleteMany({ where: { id: userId } });
  if (count === 0) return false;
  await tx.accountPurge.upsert({ where: { userId }, create: { userId }, update: {} });
  return true;
}
