export { isValidEmail, normalizeEmail, passwordPolicyError } from "./password-policy.js";
export { createPasswordHasher } from "./password-hasher.js";
export type { PasswordHashCost, PasswordHasher } from "./password-hasher.js";
export { createTokenService, InvalidTokenError, issuedAtMsFromJti } from "./token-service.js";
export type { Role, TokenClaims, TokenService, VerifiedToken } from "./token-service.js";
export { createRevocationStore, RevocationUnavailableError } from "./revocation-store.js";
export type { RevocationStore, RevocationStoreOptions } from "./revocation-store.js";
