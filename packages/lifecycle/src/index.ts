export { createShutdownCoordinator } from "./shutdown-coordinator.js";
export type { ShutdownCoordinator, ShutdownLogger, ShutdownPhase } from "./shutdown-coordinator.js";
export { loadBuildInfo } from "./build-info.js";
export type { BuildInfo } from "./build-info.js";
