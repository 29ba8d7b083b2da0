/** Body bytes a judge regex runs over; the rest of an answer is not read. */
export const JUDGE_BODY_LIMIT_BYTES = 64 * 1024;
/** Body bytes kept in `proxy_statistic_responses` when `save_responses` is on. */
export const SAVED_BODY_LIMIT_BYTES = 16 * 1024;

/**
 * `default`: the answer echoes at least two of the standard headers with the
 * values the checker sent (`sent`: header name to value, as sent).
 */
export function defaultJudgeMatcher(standardHeaders: readonly string[], sent: Readonly<Record<string, string>>): (body: string) => boolean {
  const values = standardHeaders.map((name) => sent[name.toLowerCase()]).filter((value): value is string => value !== undefined && value !== "");
  return (body) => {
    let seen = 0;
    for (const value of values) if (body.includes(value) && ++seen >= 2) return true;
    return false;
  };
}
