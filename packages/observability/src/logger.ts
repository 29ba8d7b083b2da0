import winston from "winston";

export type Logger = winston.Logger;

/** Keys whose values never reach a log line, wherever they sit in the metadata. */
const SECRET_KEYS = /pass(word)?|secret|token|authorization|cookie|api_?key|jwt/i;
const REDACTED = "[redacted]";

function redact(value: unknown, depth = 0): unknown {
  if (depth > 6 || value === null || typeof value !== "object") return value;
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
  if (Array.isArray(value)) return value.map((item) => redact(item, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    out[key] = SECRET_KEYS.test(key) ? REDACTED : redact(item, depth + 1);
  }
  return out;
}

/** Central redaction: runs on every entry before it is formatted. */
const redactFormat = winston.format((info) => {
  for (const key of Object.keys(info)) {
    if (key === "level" || key === "message") continue;
    info[key] = SECRET_KEYS.test(key) ? REDACTED : redact(info[key]);
  }
  return info;
});

export interface LoggerOptions {
  level?: string;
  /** `json` for machines (default), `pretty` for a terminal. */
  format?: "json" | "pretty";
  /** Extra sink, e.g. for tests that read what was logged. */
  stream?: NodeJS.WritableStream;
  silent?: boolean;
}

/** A root logger; services take `logger.child({ service, component })`. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const format =
    options.format === "pretty"
      ? winston.format.combine(redactFormat(), winston.format.timestamp(), winston.format.simple())
      : winston.format.combine(redactFormat(), winston.format.timestamp(), winston.format.json());
  const transports: winston.transport[] = [
    options.stream ? new winston.transports.Stream({ stream: options.stream }) : new winston.transports.Console(),
  ];
  return winston.createLogger({ level: options.level ?? "info", format, transports, silent: options.silent ?? false });
}
