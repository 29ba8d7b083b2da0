import { isValidEmail, normalizeEmail, passwordPolicyError } from "@roost/auth";
import type { GatewayDeps } from "../gateway.deps.js";
import { createAccount, findUserByEmail } from "../routes/accounts/account.repository.js";

/** A failure the operator can act on; the CLI prints the message and exits 1. */
export class AdminCommandError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AdminCommandError";
  }
}

type AdminDeps = Pick<GatewayDeps, "db" | "hasher" | "revocation" | "globalConfig" | "logger">;

/**
 * Creates an admin whatever the registration flags say (this is how a
 * production instance, where public first-admin bootstrap is off, gets its
 * first admin). Same e-mail rules, password policy and default settings as
 * registration.
 */
export async function createAdminAccount(deps: AdminDeps, rawEmail: string, password: string): Promise<{ userId: number; email: string }> {
  const email = normalizeEmail(rawEmail);
  if (!isValidEmail(email)) throw new AdminCommandError(`not a valid e-mail address: ${JSON.stringify(rawEmail)}`);
  const policyError = passwordPolicyError(password);
  if (policyError) throw new AdminCommandError(policyError);
  const passwordHash = await deps.hasher.hash(password);
  const result = await createAccount(deps.db.prisma, {
    email,
    passwordHash,
    config: deps.globalConfig.current(),
    policy: null,
    role: "admin",
  });
  if (result.kind === "duplicate") {
    throw new AdminCommandError(`an account with e-mail ${email} already exists (use: npm run admin -- promote --email ${email})`);
  }
  if (result.kind !== "created") throw new AdminCommandError("the account was not created");
  deps.logger.info("admin created from the CLI", { userId: result.userId });
  return { userId: result.userId, email };
}

/**
 * Gives an existing account the admin role and revokes its sessions in the
 * same transaction: a token's role claim would otherwise stay `user` until it
 * expires. If the revocation cannot be written (Redis down) nothing changes.
 */
export async function promoteToAdmin(
  deps: AdminDeps,
  rawEmail: string,
): Promise<{ userId: number; email: string; alreadyAdmin: boolean }> {
  const email = normalizeEmail(rawEmail);
  const { prisma } = deps.db;
  const user = await findUserByEmail(prisma, email);
  if (!user) throw new AdminCommandError(`no account with e-mail ${email}`);
  if (user.role === "admin") return { userId: user.id, email, alreadyAdmin: true };
  try {
    await prisma.$transaction(async (tx) => {
      await tx.user.update({ where: { id: user.id }, data: { role: "admin" } });
      await deps.revocation.revokeUserTokens(tx, user.id, Date.now());
    });
  } catch (error) {
    throw new AdminCommandError(
      `could not revoke the user's sessions, nothing was changed: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  deps.logger.info("user promoted to admin from the CLI", { userId: user.id });
  return { userId: user.id, email, alreadyAdmin: false };
}
