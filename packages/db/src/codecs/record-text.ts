/**
 * PostgreSQL's text form of a row value (`ROW(a, b, ...)::text`, written by
 * record_out), split back into its fields. The list page reads its rows as
 * such text, all in one value: the driver then decodes one string per page
 * instead of one per column, which was the largest share of the gateway's
 * CPU for a cheap page (docs/benchmarks.md), while PostgreSQL does the same
 * work. proxy-page-json.ts copies plain records itself and hands records
 * with a quoted field to this function.
 *
 * The format: `(` fields separated by `,` `)`. A NULL is nothing at all; a
 * value is written in double quotes when it is empty or holds `"`, `\`,
 * `(`, `)`, `,` or white space, and inside the quotes `"` and `\` are
 * doubled (record_in also reads `\x` as x).
 */
export class RecordTextError extends Error {
  override readonly name = "RecordTextError";
}

const OPEN = 40; // (
const CLOSE = 41; // )
const COMMA = 44;
const QUOTE = 34;
const BACKSLASH = 92;

/** Appends the fields of `text` to `into` and returns it. */
export function splitRecordText(text: string, into: (string | null)[] = []): (string | null)[] {
  const end = text.length - 1;
  if (text.charCodeAt(0) !== OPEN || text.charCodeAt(end) !== CLOSE) throw new RecordTextError("not a record");
  let at = 1;
  for (;;) {
    if (text.charCodeAt(at) === QUOTE) {
      let value = "";
      let from = ++at;
      for (;;) {
        if (at >= end) throw new RecordTextError("unterminated quoted field");
        const code = text.charCodeAt(at);
        if (code === QUOTE) {
          if (text.charCodeAt(at + 1) !== QUOTE) break;
          value += text.slice(from, at + 1);
          at += 2;
          from = at;
        } else if (code === BACKSLASH) {
          value += text.slice(from, at) + text.charAt(at + 1);
          at += 2;
          from = at;
        } else {
          at++;
        }
      }
      into.push(value + text.slice(from, at));
      at++;
    } else {
      let stop = at;
      while (stop < end && text.charCodeAt(stop) !== COMMA) stop++;
      into.push(stop === at ? null : text.slice(at, stop));
      at = stop;
    }
    if (at >= end) return into;
    if (text.charCodeAt(at) !== COMMA) throw new RecordTextError("malformed record");
    at++;
  }
}
