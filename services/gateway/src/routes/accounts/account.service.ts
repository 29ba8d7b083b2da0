import { randomBytes } from "node:crypto";
import { isValidEmail, normalizeEmail, passwordPolicyError, type Role, type VerifiedToken } from "@roost/auth";
import { limitTransactionWaits, type Tx } from "@roost/db";
import { rotatorKeys } from "@roost/rotation";
import { isBlockedUrl } from "@roost/global-config";
import { attachSources, SourcesNotQueuedError } from "@roost/scraping";
import type { GatewayDeps } from "../../gateway.deps.js";
import { badRequest, conflict, forbidden, HttpError, unauthorized, unavailable } from "../../http/http-error.js";
import { createAccount, deleteAccountRows, findUserByEmail, findUserById, setUserPasswordHash } from "./account.repository.js";

export const INVALID_CREDENTIALS = "Invalid email or password";
export const ACCOUNT_BUSY = "An upload or another change to this account is in progress; nothing was changed, try again when it finishes";

/**
 * Milliseconds a password change or an account deletion waits for a lock
 * (`lock_timeout`) before it gives up with 409. An
 * upload holds its user's row (FOR KEY SHARE) until it commits or is cut off
 * (API_STREAM_STALL_SECONDS, the request timeout), and a deletion waiting
 * for it would hold a pooled connection all that time; so would every later
 * change of the same account queued behind the deletion.
 */
export const ACCOUNT_LOCK_WAIT_MS = 2000;
/** Milliseconds any one statement of those transactions may run (lock waits included); above the lock wait so the two are told apart. */
const ACCOUNT_STATEMENT_TIMEOUT_MS = 2 * ACCOUNT_LOCK_WAIT_MS;

/** Prisma's wait for a pooled connection (its default is 2 s): as long as the pool's connect timeout. */
const POOL_CONNECT_WAIT_MS = 5_000;

/** PostgreSQL's lock_not_available (SQLSTATE 55P03): `lock_timeout` expired. */
const LOCK_NOT_AVAILABLE = "55P03";

/**
 * True when a Prisma error wraps PostgreSQL's lock_not_available. The pg
 * adapter passes codes it has no name for as `{kind: "postgres", code}`.
 */
function isLockTimeout(error: unknown): boolean {
  const cause = (error as { meta?: { driverAdapterError?: { cause?: { code?: unknown; originalCode?: unknown } } } } | null)?.meta?.driverAdapterError
    ?.cause;
  return cause?.code === LOCK_NOT_AVAILABLE || cause?.originalCode === LOCK_NOT_AVAILABLE;
}

export interface AccountService {
  /** `warning` when the default scrape sources could not be queued (their attachment was undone). */
  register(email: string, password: string): Promise<{ token: string; role: Role; warning?: string }>;
  login(email: string, password: string): Promise<{ token: string; role: Role }>;
  refresh(token: VerifiedToken): Promise<{ token: string; role: Role }>;
  logout(token: VerifiedToken): Promise<void>;
  changePassword(token: VerifiedToken, oldPassword: string, newPassword: string): Promise<void>;
  deleteAccount(token: VerifiedToken, password: string): Promise<void>;
}

/** A revocation write that did not land: the request changes nothing and answers 503. */
function revocationFailed(error: unknown): never {
  if (error instanceof HttpError) throw error;
  throw unavailable("Session store unavailable, nothing was changed; try again", 1);
}

function roleOf(stored: string): Role {
  return stored === "admin" ? "admin" : "user";
}

export function createAccountService(deps: GatewayDeps): AccountService {
  const { prisma } = deps.db;
  const { hasher, tokens, revocation, logger } = deps;
  // Unknown e-mails still pay for one hash verification, so timing does not
  // tell which addresses have accounts.
  const dummyHash = hasher.hash(randomBytes(18).toString("base64"));

  // Accounts with a password change or deletion under way in this process.
  // A second one at the same time is answered 409 at once: it would only
  // queue behind the first for the same row lock, holding a pooled
  // connection, after an argon2 verification of its own.
  const changing = new Set<number>();

  /** Runs `work` as the account's only password change or deletion in this process, else 409. */
  async function oneAtATime<T>(userId: number, work: () => Promise<T>): Promise<T> {
    if (changing.has(userId)) throw conflict(ACCOUNT_BUSY);
    changing.add(userId);
    try {
      return await work();
    } finally {
      changing.delete(userId);
    }
  }

  /** The account once `password` is its password; else 401 `message`, counted in svc_auth_failures_total as `reason`. */
  async function userWithPassword(userId: number, password: string, reason: string, message: string) {
    const user = await findUserById(prisma, userId);
    if (!user) throw unauthorized("Invalid token");
    if (!(await hasher.verify(user.passwordHash, password))) {
      deps.metrics.authFailuresTotal.inc({ reason });
      throw unauthorized(message);
    }
    return user;
  }

  /**
   * Runs a password change or an account deletion with bounded lock waits.
   * A lock that cannot be had in ACCOUNT_LOCK_WAIT_MS is a 409 (the account
   * is busy with its own upload or change; retrying at once would not help),
   * anything else that fails is a 503; either way the transaction rolled
   * back and nothing changed.
   */
  async function changeAccount(userId: number, action: string, work: (tx: Tx) => Promise<void>): Promise<void> {
    try {
      await prisma.$transaction(
        async (tx) => {
          await limitTransactionWaits(tx, ACCOUNT_STATEMENT_TIMEOUT_MS, ACCOUNT_LOCK_WAIT_MS);
          await work(tx);
        },
        // Prisma's own limits stay out of the way: PostgreSQL ends a wait
        // first and the connection comes back free (a transaction of three
        // statements that each wait their longest, then a Redis write, fits);
        // waiting for a connection is bounded by the pool's timeout (5 s).
        { maxWait: POOL_CONNECT_WAIT_MS, timeout: 4 * ACCOUNT_STATEMENT_TIMEOUT_MS },
      );
    } catch (error) {
      if (isLockTimeout(error)) {
        logger.warn("account change refused: the account is locked by another transaction", { userId, action });
        throw conflict(ACCOUNT_BUSY);
      }
      revocationFailed(error);
    }
  }

  /**
   * The global `scraper.scrape_sites` (those the website blacklist allows)
   * become the new user's sources and are queued; when queueing fails they
   * are removed again and the answer carries a warning (contract: register).
   */
  async function attachDefaultSources(userId: number): Promise<string | null> {
    const current = deps.globalConfig.current();
    const urls = [...new Set(current.scraper.scrape_sites.map((site) => new URL(site).href))].filter((url) => !isBlockedUrl(url, current.website_blacklist));
    if (urls.length === 0) return null;
    try {
      await attachSources({ pool: deps.db.pool, scrapes: deps.queues.scrape, logger }, userId, urls);
      return null;
    } catch (error) {
      if (!(error instanceof SourcesNotQueuedError)) logger.error("default scrape sources not attached", { userId, error });
      return "Default scraping sources could not be queued and were not added; add them again later.";
    }
  }

  /** Signs a token issued strictly after the user's revocation cutoff (clocks of other instances may be ahead). */
  async function issue(userId: number, role: Role) {
    const cutoffMs = await revocation.userCutoffMs(prisma, userId);
    const { token } = tokens.sign({ userId, role }, cutoffMs === null ? 0 : cutoffMs + 1);
    return { token, role };
  }

  return {
    async register(rawEmail, password) {
      const email = normalizeEmail(rawEmail);
      if (!isValidEmail(email)) throw badRequest("Invalid email address");
      const policyError = passwordPolicyError(password);
      if (policyError) throw badRequest(policyError);
      const passwordHash = await hasher.hash(password);
      const result = await createAccount(prisma, {
        email,
        passwordHash,
        config: deps.globalConfig.current(),
        policy: {
          disablePublicRegistration: deps.config.DISABLE_PUBLIC_REGISTRATION,
          enablePublicFirstAdminBootstrap: deps.config.ENABLE_PUBLIC_FIRST_ADMIN_BOOTSTRAP,
        },
      }).catch((error: unknown) => {
        if (!isLockTimeout(error)) throw error;
        logger.warn("registration refused: waited too long for the registration lock");
        throw new HttpError(503, "Too many registrations at once, try again shortly", {}, { "Retry-After": "2" });
      });
      if (result.kind === "duplicate") throw conflict("Email already registered");
      if (result.kind === "closed") throw forbidden("Registration is closed");
      logger.info("user registered", { userId: result.userId, role: result.role });
      const warning = await attachDefaultSources(result.userId);
      return { ...(await issue(result.userId, result.role)), ...(warning !== null && { warning }) };
    },

    async login(rawEmail, password) {
      const user = await findUserByEmail(prisma, normalizeEmail(rawEmail));
      if (!user) {
        await hasher.verify(await dummyHash, password);
        deps.metrics.authFailuresTotal.inc({ reason: "bad_credentials" });
        throw unauthorized(INVALID_CREDENTIALS);
      }
      if (!(await hasher.verify(user.passwordHash, password))) {
        deps.metrics.authFailuresTotal.inc({ reason: "bad_credentials" });
        throw unauthorized(INVALID_CREDENTIALS);
      }
      return issue(user.id, roleOf(user.role));
    },

    async refresh(token) {
      const user = await findUserById(prisma, token.user_id);
      if (!user) throw unauthorized("Invalid token");
      // Refreshing one token twice at once must not mint two successors.
      if (!(await revocation.revokeToken(token).catch(revocationFailed))) throw unauthorized("Token revoked");
      return issue(user.id, roleOf(user.role));
    },

    async logout(token) {
      if (!(await revocation.revokeToken(token).catch(revocationFailed))) throw unauthorized("Token revoked");
    },

    async changePassword(token, oldPassword, newPassword) {
      await oneAtATime(token.user_id, async () => {
        const user = await userWithPassword(token.user_id, oldPassword, "bad_old_password", "Old password is incorrect");
        const policyError = passwordPolicyError(newPassword);
        if (policyError) throw badRequest(policyError);
        const passwordHash = await hasher.hash(newPassword);
        await changeAccount(user.id, "change_password", async (tx) => {
          // The row first: a lock wait happens here, before anything reaches Redis (see deleteAccount).
          if (!(await setUserPasswordHash(tx, user.id, passwordHash))) throw unauthorized("Invalid token");
          await revocation.revokeUserTokens(tx, user.id, Date.now());
        });
        logger.info("password changed", { userId: user.id });
      });
    },

    async deleteAccount(token, password) {
      await oneAtATime(token.user_id, async () => {
        const user = await userWithPassword(token.user_id, password, "bad_password", "Password is incorrect");
        await changeAccount(user.id, "delete_account", async (tx) => {
          // Delete first: this is where the wait for an upload holding the
          // row happens. The cutoff reaches Redis (and every instance's cache)
          // at once and is not rolled back with the transaction, so it is
          // written last: a deletion that fails does not log the surviving
          // account out everywhere. Tokens issued between the two statements
          // are revoked too (the cutoff is taken after them).
          if (!(await deleteAccountRows(tx, user.id))) throw unauthorized("Invalid token");
          await revocation.revokeUserTokens(tx, user.id, Date.now());
        });
        logger.info("account deleted", { userId: user.id });
        // Its rotators went with the row (cascade): their listeners close now, not at the next reconcile.
        await deps.redis.publish(rotatorKeys(deps.config.QUEUE_PREFIX).changedChannel, JSON.stringify({ userId: user.id })).catch(() => undefined);
      });
      // The purge also runs on its schedule; this only starts it sooner.
      await deps.queues.maintenance.enqueue("purge-deleted-accounts", {}).catch(() => undefined);
    },
  };
}
