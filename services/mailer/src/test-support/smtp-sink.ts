import type { AddressInfo } from "node:net";
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from "smtp-server";
import { waitFor } from "@roost/testkit";

/**
 * A real SMTP server in the test process (the smtp-server package) that
 * keeps every message it accepted. STARTTLS is disabled (nodemailer would
 * upgrade and then refuse the self-signed certificate) and AUTH is optional.
 * A message counts as delivered only once the server answered 250 to its
 * DATA, exactly what a sender takes as "accepted".
 */
export interface ReceivedMail {
  raw: string;
  /** Lowercased header names, unfolded values; the first occurrence wins. */
  headers: Record<string, string>;
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
  /** X-Roost-Outbox-Id, or "" when absent. */
  outboxId: string;
}

export interface SmtpSinkOptions {
  /** Port to listen on; 0 picks a free one. */
  port?: number;
  /** Recipients answered with 550 at RCPT TO. */
  rejectRecipients?: readonly string[];
  /** Runs after DATA was read and before the 250: a test can hold a message here. Throwing refuses the message (451). */
  beforeAccept?: (mail: ReceivedMail) => Promise<void> | void;
}

export interface SmtpSink {
  readonly port: number;
  readonly messages: ReceivedMail[];
  /** Resolves when at least `count` messages were accepted. */
  waitForMessages(count: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  /** Stops listening and drops open connections: later connections are refused. */
  stop(): Promise<void>;
}

function unfoldHeaders(block: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of block.replace(/\r\n[ \t]+/g, " ").split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    headers[name] ??= line.slice(colon + 1).trim();
  }
  return headers;
}

function decodeBody(body: string, encoding: string | undefined): string {
  switch ((encoding ?? "7bit").toLowerCase()) {
    case "base64":
      return Buffer.from(body.replace(/\s+/g, ""), "base64").toString("utf8");
    case "quoted-printable":
      return Buffer.from(
        body
          .replace(/=\r?\n/g, "")
          .replace(/=([0-9A-F]{2})/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))),
        "latin1",
      ).toString("utf8");
    default:
      return body;
  }
}

/** Splits a raw message into headers and its text/plain and text/html parts (flat or multipart). */
export function parseMail(raw: string): Pick<ReceivedMail, "headers" | "text" | "html"> {
  const split = raw.indexOf("\r\n\r\n");
  const headers = unfoldHeaders(split >= 0 ? raw.slice(0, split) : raw);
  const body = split >= 0 ? raw.slice(split + 4) : "";
  const parts: { type: string; content: string }[] = [];
  const collect = (partHeaders: Record<string, string>, partBody: string) => {
    const type = (partHeaders["content-type"] ?? "text/plain").toLowerCase();
    const boundary = /boundary="?([^";]+)"?/i.exec(partHeaders["content-type"] ?? "")?.[1];
    if (type.startsWith("multipart/") && boundary) {
      for (const chunk of partBody.split(`--${boundary}`).slice(1)) {
        if (chunk.startsWith("--")) break;
        const inner = chunk.replace(/^\r\n/, "");
        const at = inner.indexOf("\r\n\r\n");
        collect(unfoldHeaders(inner.slice(0, at)), inner.slice(at + 4).replace(/\r\n$/, ""));
      }
      return;
    }
    parts.push({ type, content: decodeBody(partBody, partHeaders["content-transfer-encoding"]) });
  };
  collect(headers, body);
  return {
    headers,
    text: parts.find((p) => p.type.startsWith("text/plain"))?.content ?? "",
    html: parts.find((p) => p.type.startsWith("text/html"))?.content ?? "",
  };
}

function readStream(stream: SMTPServerDataStream): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    stream.on("error", reject);
  });
}

export async function startSmtpSink(options: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const messages: ReceivedMail[] = [];
  const rejected = new Set((options.rejectRecipients ?? []).map((r) => r.toLowerCase()));
  const server = new SMTPServer({
    disabledCommands: ["STARTTLS"],
    authOptional: true,
    logger: false,
    closeTimeout: 200,
    // No network here: a reverse DNS lookup per connection would only add latency.
    disableReverseLookup: true,
    onRcptTo(address, _session, callback) {
      if (rejected.has(address.address.toLowerCase())) {
        const error: Error & { responseCode?: number } = new Error("Mailbox unavailable");
        error.responseCode = 550;
        callback(error);
        return;
      }
      callback();
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback: (error?: Error | null) => void) {
      void (async () => {
        const raw = await readStream(stream);
        const parsed = parseMail(raw);
        const mail: ReceivedMail = {
          raw,
          ...parsed,
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          subject: parsed.headers["subject"] ?? "",
          outboxId: parsed.headers["x-roost-outbox-id"] ?? "",
        };
        await options.beforeAccept?.(mail);
        messages.push(mail);
        callback(null);
      })().catch((error: unknown) => {
        const refusal: Error & { responseCode?: number } = new Error(error instanceof Error ? error.message : "refused");
        refusal.responseCode = 451;
        callback(refusal);
      });
    },
  });
  // Clients that die mid-session (a killed mailer) reset their sockets.
  server.on("error", () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  let stopped: Promise<void> | null = null;

  return {
    port,
    messages,
    async waitForMessages(count, timeoutMs = 15_000) {
      await waitFor(() => messages.length >= count, { timeoutMs, what: `${count} e-mails (got ${messages.length})` });
      return messages;
    },
    stop() {
      stopped ??= new Promise<void>((resolve) => server.close(() => resolve()));
      return stopped;
    },
  };
}
