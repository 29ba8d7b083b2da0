import { verifyRotatorPassword } from "../rotator-password.js";
import { parseUsernameOptions, type UsernameOptions } from "../username-options.js";

export interface ListenerAuth {
  required: boolean;
  username: string;
  /** HMAC-SHA-256 of the password under `serverKey` (rotator-password.ts). */
  passwordHash: string;
  serverKey: string;
}

/**
 * Checks the client's credentials and returns the username options, or
 * undefined when refused. Without required auth any password passes and the
 * username carries only options.
 */
export function authenticate(auth: ListenerAuth, username: string | undefined, password: string | undefined): UsernameOptions | undefined {
  const options = parseUsernameOptions(username ?? "");
  if (!options) return undefined;
  if (!auth.required) return options;
  if (username === undefined || password === undefined || options.user !== auth.username) return undefined;
  return verifyRotatorPassword(auth.serverKey, password, auth.passwordHash) ? options : undefined;
}

/** `user:password` of a `Basic` Proxy-Authorization header, else undefined. */
export function parseBasic(header: string | undefined): { username: string; password: string } | undefined {
  if (!header) return undefined;
  const match = /^\s*Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon === -1) return undefined;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
