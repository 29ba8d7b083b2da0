import { RE2JS } from "re2js";

/** A judge regex that the linear-time engine cannot compile (lookarounds, backreferences, bad syntax). */
export class JudgeRegexError extends Error {
  override readonly name = "JudgeRegexError";
}

/**
 * Compiles a judge regex with RE2 semantics (linear in the body, so no judge
 * answer can stall the checker). Saves validate with the same function;
 * `default` is not a regex and is handled by the checker.
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

/** Null when the engine takes the regex (or it is `default`), else why not. */
export function judgeRegexProblem(source: string): string | null {
  if (source === "default") return null;
  try {
    compileJudgeRegex(source);
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}
