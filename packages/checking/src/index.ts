export { claimDueChecks } from "./check-schedule.repository.js";
export type { ClaimedBatch, ClaimOptions } from "./check-schedule.repository.js";
export { DEFAULT_CHECK_BATCH_SIZE, runCheckTick } from "./check-scheduler.js";
export type { CheckSchedulerOptions, CheckTickResult } from "./check-scheduler.js";
