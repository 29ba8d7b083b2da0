import type { Counter, Gauge } from "prom-client";
import type { Metrics } from "@roost/observability";

export interface MailerMetrics {
  sent: Counter<"kind">;
  /** Messages given up on (permanent rejection or out of attempts). */
  failed: Counter<"kind">;
  /** Failed attempts, retried or not. */
  sendErrors: Counter<"kind" | "permanent">;
  dropped: Counter<"kind" | "reason">;
  pending: Gauge;
  oldestPendingAgeSeconds: Gauge;
}

/** The mailer's families in the process registry (idempotent: all-in-one may build it twice). */
export function mailerMetrics(metrics: Metrics): MailerMetrics {
  return {
    sent: metrics.counter("svc_mailer_messages_sent_total", "E-mails accepted by the SMTP server, by kind", ["kind"]),
    failed: metrics.counter("svc_mailer_messages_failed_total", "E-mails given up on after a permanent rejection or the last attempt, by kind", [
      "kind",
    ]),
    sendErrors: metrics.counter("svc_mailer_send_errors_total", "Failed send attempts, by kind and whether the failure was permanent", [
      "kind",
      "permanent",
    ]),
    dropped: metrics.counter("svc_mailer_messages_dropped_total", "Outbox rows finished without sending (no such account), by kind and reason", [
      "kind",
      "reason",
    ]),
    pending: metrics.gauge("svc_mailer_outbox_pending", "Outbox rows not yet sent, dropped or failed (refreshed every poll)"),
    oldestPendingAgeSeconds: metrics.gauge(
      "svc_mailer_outbox_oldest_pending_age_seconds",
      "Age in seconds of the oldest unfinished outbox row, 0 when none (refreshed every poll)",
    ),
  };
}
