/**
 * The contract's password policy: at least 12 characters, an uppercase
 * letter, a lowercase letter, a digit, and no whitespace.
 * Returns a message for the client, or null when the password is acceptable.
 */
export function passwordPolicyError(password: unknown): string | null {
  if (typeof password !== "string") return "Password is required";
  if (password.length < 12) return "Password must be at least 12 characters long";
  if (password.length > 1024) return "Password must be at most 1024 characters long";
  if (/\s/u.test(password)) return "Password must not contain whitespace";
  if (!/\p{Lu}/u.test(password)) return "Password must contain an uppercase letter";
  if (!/\p{Ll}/u.test(password)) return "Password must contain a lowercase letter";
  if (!/\p{Nd}/u.test(password)) return "Password must contain a digit";
  return null;
}

/** Trimmed and lowercased, as the contract stores and looks up e-mails. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

// A pragmatic address check: one @, a non-empty local part without spaces, a
// dotted domain of letters, digits and hyphens. Full RFC 5322 accepts
// addresses no mail server delivers to.
const EMAIL = /^[^\s@"(),:;<>[\\\]]{1,64}@(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i;

// Control characters (C0, DEL, C1) and format characters (bidi overrides and isolates, zero-width
// joiners, soft hyphen): invisible or reordering text, so an address could display as another.
const INVISIBLE = /[\p{Cc}\p{Cf}]/u;

export function isValidEmail(email: string): boolean {
  return EMAIL.test(email) && !email.includes("..") && !INVISIBLE.test(email);
}
