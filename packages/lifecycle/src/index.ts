export { createShutdownCoordinator } from "./shutdown-coordinator.js";
export type { ShutdownCoordinator, ShutdownLogger, ShutdownPhase } from "./shutdown-coordinator.js";
export { runService } from "./run-service.js";
export type { ServiceContext, ServiceEntry, ServiceLogConfig, ServiceProcess, ServiceRun } from "./run-service.js";
export { loadBuildInfo } from "./build-info.js";
export type { BuildInfo } from "./build-info.js";
