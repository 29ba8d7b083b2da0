import nodemailer from "nodemailer";
import type { SmtpSettings } from "./config/mailer.config.js";
import type { RenderedMail } from "./templates/html.js";

export interface OutgoingMail extends RenderedMail {
  to: string;
  /** Outbox row id: goes into Message-ID and X-Roost-Outbox-Id, stable across retries. */
  outboxId: bigint;
}

export interface SmtpSender {
  /** Resolves once the SMTP server accepted the message (250 after DATA); rejects with a SendError otherwise. */
  send(mail: OutgoingMail): Promise<void>;
  close(): void;
}

/**
 * A failed send. `permanent` when the server refused the message with a 5xx
 * reply (bad recipient, policy): retrying cannot help. Connection failures,
 * timeouts, 4xx replies and authentication failures (a configuration fix
 * makes them pass) are transient and retried with back-off.
 */
export class SendError extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = "SendError";
  }
}

interface NodemailerError {
  code?: unknown;
  responseCode?: unknown;
  message?: unknown;
}

export function toSendError(error: unknown): SendError {
  const e: NodemailerError = typeof error === "object" && error !== null ? error : {};
  const code = typeof e.code === "string" ? e.code : undefined;
  const responseCode = typeof e.responseCode === "number" ? e.responseCode : undefined;
  const message = typeof e.message === "string" ? e.message : String(error);
  const permanent = responseCode !== undefined && responseCode >= 500 && responseCode < 600 && code !== "EAUTH";
  return new SendError(message, permanent, code ?? (responseCode !== undefined ? String(responseCode) : undefined));
}

/** The part after @ of the sender, for Message-IDs. */
function senderDomain(address: string): string {
  const at = address.lastIndexOf("@");
  return at >= 0 ? address.slice(at + 1) : "roost.invalid";
}

/**
 * One connection per message (no pool): a mailer sends a handful of messages
 * at a time, and a fresh connection per message keeps a broken server
 * connection from affecting the next message.
 */
export function createSmtpSender(settings: SmtpSettings): SmtpSender {
  const transport = nodemailer.createTransport({
    host: settings.host,
    port: settings.port,
    secure: settings.secure,
    // Without it nodemailer sends in the clear when the server does not offer STARTTLS.
    requireTLS: !settings.secure && settings.requireTls,
    ...(settings.auth ? { auth: { user: settings.auth.user, pass: settings.auth.pass } } : {}),
    connectionTimeout: settings.timeoutMs,
    greetingTimeout: settings.timeoutMs,
    socketTimeout: settings.timeoutMs,
    dnsTimeout: settings.timeoutMs,
  });
  const domain = senderDomain(settings.fromAddress);
  return {
    async send(mail) {
      try {
        await transport.sendMail({
          from: { name: settings.fromName, address: settings.fromAddress },
          to: mail.to,
          subject: mail.subject,
          text: mail.text,
          html: mail.html,
          messageId: `<roost.outbox.${mail.outboxId}@${domain}>`,
          headers: { "X-Roost-Outbox-Id": String(mail.outboxId) },
        });
      } catch (error) {
        throw toSendError(error);
      }
    },
    close() {
      transport.close();
    },
  };
}
