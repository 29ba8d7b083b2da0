export { maintenanceConfigFromEnv, maintenanceEnvSchema, maintenanceInfraSchema } from "./config/maintenance.config.js";
export type { MaintenanceConfig } from "./config/maintenance.config.js";
export { createMaintenanceService } from "./maintenance.service.js";
export type { MaintenanceDeps, MaintenanceService } from "./maintenance.service.js";
export { purgeDeletedAccounts } from "./jobs/account-purge.job.js";
export { cleanupResetTokens, cleanupRevokedTokens } from "./jobs/token-cleanup.job.js";
export { maintainStatisticsPartitions } from "./jobs/statistics-retention.job.js";
