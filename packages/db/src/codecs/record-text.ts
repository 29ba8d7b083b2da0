/**
 * PostgreSQL's row text (`ROW(a, b, ...)::text`) split back into fields, so the driver decodes one
 * string per page instead of one per column. Format: `(` fields joined by `,` `)`; NULL is empty; a value
 * that is empty or holds `"` `\` `(` `)` `,` or white space is double-quoted, with `"` and `\` doubled (`\x` reads as x).
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
