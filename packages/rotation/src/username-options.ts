/** Per-request control carried in the proxy username (docs/rotator.md). */
export interface UsernameOptions {
  /** The username without its options; empty when the username is options only. */
  user: string;
  /** `-session-<key>`: keep one upstream for this key while it stays alive. */
  session?: string;
  /** `-country-<cc>`: ISO 3166-1 alpha-2, upper case. */
  country?: string;
}

const TRAILING_OPTION = /(?:^|-)(session|country)-([A-Za-z0-9_]{1,64})$/;

/**
 * Splits `<user>-session-<key>-country-<cc>` (options in any order, each at
 * most once) from the right; a username that is only options has `user` "".
 * Returns undefined for a malformed country or a repeated option.
 */
export function parseUsernameOptions(username: string): UsernameOptions | undefined {
  let rest = username;
  let session: string | undefined;
  let country: string | undefined;
  for (let match = TRAILING_OPTION.exec(rest); match; match = TRAILING_OPTION.exec(rest)) {
    const [whole, name, value = ""] = match;
    if (name === "session") {
      if (session !== undefined) return undefined;
      session = value;
    } else {
      if (country !== undefined || !/^[A-Za-z]{2}$/.test(value)) return undefined;
      country = value.toUpperCase();
    }
    rest = rest.slice(0, rest.length - whole.length);
  }
  return { user: rest, ...(session !== undefined ? { session } : {}), ...(country !== undefined ? { country } : {}) };
}
