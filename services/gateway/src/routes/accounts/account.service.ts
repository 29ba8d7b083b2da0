import { randomBytes } from "node:crypto";
import { isValidEmail, normalizeEmail, passwordPolicyError, type Role, type VerifiedToken } from "@roost/auth";
import type { GatewayDeps } from "../../gateway.deps.js";
import { badRequest, conflict, forbidden, HttpError, unauthorized, unavailable } from "../../http/http-error.js";
import { createAccount, deleteAccountRows, findUserByEmail, findUserById } from "./account.repository.js";

export const INVALID_CREDENTIALS = "Invalid email or password";

export interface AccountService {
  register(email: string, password: string): Promise<{ token: string; role: Role }>;
  login(email: string, password: string): Promise<{ token: string; role: Role }>;
  refresh(token: VerifiedToken): Promise<{ token: string; role: Role }>;
  logout(token: VerifiedToken): Promise<void>;
  changePassword(token: VerifiedToken, oldPassword: string, newPassword: string): Promise<void>;
  deleteAccount(token: VerifiedToken, password: string): Promise<void>;
}

/** A revocation write that did not land: the request changes nothing and answers 503. */
function revocationFailed(error: unknown): never {
  if (error instanceof HttpError) throw error;
  throw unavailable("Session store unavailable, nothing was changed; try again");
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
      });
      if (result.kind === "duplicate") throw conflict("Email already registered");
      if (result.kind === "closed") throw forbidden("Registration is closed");
      logger.info("user registered", { userId: result.userId, role: result.role });
      return issue(result.userId, result.role);
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
      const user = await findUserById(prisma, token.user_id);
      if (!user) throw unauthorized("Invalid token");
      if (!(await hasher.verify(user.passwordHash, oldPassword))) {
        deps.metrics.authFailuresTotal.inc({ reason: "bad_old_password" });
        throw unauthorized("Old password is incorrect");
      }
      const policyError = passwordPolicyError(newPassword);
      if (policyError) throw badRequest(policyError);
      const passwordHash = await hasher.hash(newPassword);
      await prisma
        .$transaction(async (tx) => {
          await tx.user.update({ where: { id: user.id }, data: { passwordHash } });
          await revocation.revokeUserTokens(tx, user.id, Date.now());
        })
        .catch(revocationFailed);
      logger.info("password changed", { userId: user.id });
    },

    async deleteAccount(token, password) {
      const user = await findUserById(prisma, token.user_id);
      if (!user) throw unauthorized("Invalid token");
      if (!(await hasher.verify(user.passwordHash, password))) {
        deps.metrics.authFailuresTotal.inc({ reason: "bad_password" });
        throw unauthorized("Password is incorrect");
      }
      await prisma
        .$transaction(async (tx) => {
          await revocation.revokeUserTokens(tx, user.id, Date.now());
          await deleteAccountRows(tx, user.id);
        })
        .catch(revocationFailed);
      logger.info("account deleted", { userId: user.id });
      // The purge also runs on its schedule; this only starts it sooner.
      await deps.queues.maintenance.enqueue("purge-deleted-accounts", {}).catch(() => undefined);
    },
  };
}
