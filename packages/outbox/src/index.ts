export { outboxKindSchema, outboxMessages } from "./outbox-messages.js";
export type { OutboxKind, OutboxStatus } from "./outbox-messages.js";
export {
  claimDueMessages,
  deleteFinishedMessages,
  enqueueEmail,
  insertPasswordResetIntent,
  markDropped,
  markFailed,
  markRetry,
  markSent,
  outboxStats,
  releaseClaims,
  renewLease,
} from "./outbox.repository.js";
export type { ClaimedMessage, OutboxStats } from "./outbox.repository.js";
export { createResetToken, deleteResetToken, hashResetToken, storeResetToken } from "./reset-token.js";
