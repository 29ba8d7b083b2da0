import { createSecretKey } from "node:crypto";
import jwt from "jsonwebtoken";
import { v7 as uuidv7 } from "uuid";

export type Role = "admin" | "user";

/** The contract's claims. */
export interface TokenClaims {
  user_id: number;
  role: Role;
  iat: number;
  exp: number;
  jti: string;
}

export interface VerifiedToken extends TokenClaims {
  /**
   * When the token was issued, in milliseconds. `iat` has one-second
   * resolution, too coarse to tell a token issued just before a password
   * change from one issued just after; the jti is a UUIDv7, whose first 48
   * bits are the issue time in milliseconds.
   */
  issuedAtMs: number;
}

export class InvalidTokenError extends Error {
  constructor(readonly reason: "missing" | "malformed" | "expired" | "signature" | "claims") {
    super(`invalid token: ${reason}`);
    this.name = "InvalidTokenError";
  }
}

export interface TokenService {
  readonly ttlMinutes: number;
  /** Signs a token; `notBeforeMs` forces the issue time after a revocation cutoff. */
  sign(subject: { userId: number; role: Role }, notBeforeMs?: number): { token: string; claims: VerifiedToken };
  verify(token: string): VerifiedToken;
}

export function issuedAtMsFromJti(jti: string): number | null {
  const hex = jti.replace(/-/g, "");
  if (!/^[0-9a-f]{32}$/i.test(hex) || hex[12] !== "7") return null;
  return parseInt(hex.slice(0, 12), 16);
}

/** Verified tokens remembered per service: a session sends the same token on every request. */
export const VERIFIED_TOKEN_CACHE_SIZE = 10_000;

export function createTokenService({ secret, ttlMinutes }: { secret: string; ttlMinutes: number }): TokenService {
  if (Buffer.byteLength(secret) < 32) throw new Error("JWT secret must be at least 32 bytes");
  // A KeyObject, made once: given a string, jsonwebtoken first tries to parse
  // it as a PEM public key on every call and catches the failure, which made
  // each verify ~50x slower (~0.5 ms of CPU per authenticated request).
  const key = createSecretKey(Buffer.from(secret));
  // Token text -> its verified claims. Only tokens that passed every check
  // get in, keyed by the whole text (signature included), so a hit is the
  // answer verification would give again, except for time: expiry is checked
  // on every call. Verification was about a tenth of the gateway's CPU for a
  // cheap list page (docs/benchmarks.md). Bounded; the oldest entry goes first.
  const verified = new Map<string, VerifiedToken>();
  const remember = (token: string, claims: VerifiedToken): void => {
    if (verified.size >= VERIFIED_TOKEN_CACHE_SIZE) {
      const oldest = verified.keys().next();
      if (!oldest.done) verified.delete(oldest.value);
    }
    verified.set(token, Object.freeze(claims));
  };
  return {
    ttlMinutes,
    sign({ userId, role }, notBeforeMs = 0) {
      const issuedAtMs = Math.max(Date.now(), notBeforeMs);
      const jti = uuidv7({ msecs: issuedAtMs });
      const iat = Math.floor(issuedAtMs / 1000);
      const claims: VerifiedToken = { user_id: userId, role, iat, exp: iat + ttlMinutes * 60, jti, issuedAtMs };
      const token = jwt.sign({ user_id: userId, role, iat, exp: claims.exp, jti }, key, { algorithm: "HS256" });
      return { token, claims };
    },
    verify(token) {
      if (!token) throw new InvalidTokenError("missing");
      const known = verified.get(token);
      if (known) {
        // jsonwebtoken's rule: expired once the clock (whole seconds) reaches exp.
        if (Math.floor(Date.now() / 1000) < known.exp) return known;
        verified.delete(token);
        throw new InvalidTokenError("expired");
      }
      let decoded: unknown;
      try {
        // Only HS256: `alg: none` and algorithm-confusion tokens fail here.
        decoded = jwt.verify(token, key, { algorithms: ["HS256"] });
      } catch (error) {
        if (error instanceof jwt.TokenExpiredError) throw new InvalidTokenError("expired");
        if (error instanceof jwt.JsonWebTokenError && /malformed|jwt must be/i.test(error.message)) {
          throw new InvalidTokenError("malformed");
        }
        throw new InvalidTokenError("signature");
      }
      if (typeof decoded !== "object" || decoded === null) throw new InvalidTokenError("claims");
      const c = decoded as Record<string, unknown>;
      const { user_id, role, iat, exp, jti } = c;
      if (
        typeof user_id !== "number" ||
        !Number.isSafeInteger(user_id) ||
        (role !== "admin" && role !== "user") ||
        typeof iat !== "number" ||
        typeof exp !== "number" ||
        typeof jti !== "string"
      ) {
        throw new InvalidTokenError("claims");
      }
      const issuedAtMs = issuedAtMsFromJti(jti);
      if (issuedAtMs === null) throw new InvalidTokenError("claims");
      const claims: VerifiedToken = { user_id, role, iat, exp, jti, issuedAtMs };
      remember(token, claims);
      return claims;
    },
  };
}
