import { RE2JS } from "re2js";

/** Body bytes a judge regex runs over; the rest of an answer is not read. */
export const JUDGE_BODY_LIMIT_BYTES = 64 * 1024;
/** Body bytes kept in `proxy_statistic_responses` when `save_responses` is on. */
export const SAVED_BODY_LIMIT_BYTES = 16 * 1024;

/** A judge regex that the linear-time engine cannot compile (lookarounds, backreferences, bad syntax). */
export class JudgeRegexError extends Error {
  override readonly name = "JudgeRegexError";
}

/**
 * Compiles a user's or the admin's judge regex with RE2 semantics (linear in
 * the body, so no answer can stall the checker). The same engine validates it
 * at save; `default` is not a regex (see defaultJudgeMatcher).
 */
export function compileJudgeRegex(source: string): (body: string) => boolean {
  let pattern: RE2JS;
  try {
    pattern = RE2JS.compile(source);
  } catch (error) {
    throw new JudgeRegexError(`judge regex cannot be used: ${error instanceof Error ? error.message : String(error)}`);
  }
  return (body) => pattern.matcher(body).find();
}

/** Null when the engine takes the regex (or it is `default`), else why not: for a 400 at save. */
export function judgeRegexProblem(source: string): string | null {
  if (source === "default") return null;
  try {
    compileJudgeRegex(source);
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

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
