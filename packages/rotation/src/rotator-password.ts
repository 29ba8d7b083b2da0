import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * Rotator passwords are stored as HMAC-SHA-256 under a server key (hex), so
 * the listener verifies one per connection without a slow hash and a leaked
 * row does not give the password.
 */
export function hashRotatorPassword(serverKey: string, password: string): string {
  return createHmac("sha256", serverKey).update(password, "utf8").digest("hex");
}

/** Constant-time comparison of `password` with a stored hash. */
export function verifyRotatorPassword(serverKey: string, password: string, storedHash: string): boolean {
  const expected = Buffer.from(storedHash, "hex");
  const actual = createHmac("sha256", serverKey).update(password, "utf8").digest();
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}
