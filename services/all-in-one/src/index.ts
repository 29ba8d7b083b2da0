export { allInOneConfigFromEnv, allInOneEnvSchema, SERVICE_ROLES } from "./config/all-in-one.config.js";
export type { AllInOneConfig, ServiceRole } from "./config/all-in-one.config.js";
