// Node.js flags per service: `npm start` passes them to the process it starts,
// `npm run bench` to the gateway it measures (README, "Running the services apart").
// A service gets flags only where a benchmark of that service justified them.

// The gateway's list pages: a 64 MiB young generation, a fixed old-generation
// growing factor and no allocation-site pretenuring keep V8's pauses short
// under load (docs/benchmarks.md, items 15 and 21).
export const GATEWAY_NODE_FLAGS = ["--min-semi-space-size=64", "--max-semi-space-size=64", "--heap-growing-percent=300", "--no-allocation-site-pretenuring"];

/** Per service; the mailer and the maintenance worker run with Node's defaults. */
export const SERVICE_NODE_FLAGS = {
  gateway: GATEWAY_NODE_FLAGS,
  maintenance: [],
  mailer: [],
};

/**
 * The flags for one process. All-in-one hosts the gateway when SERVICES is
 * unset, `all` or names `gateway`, and then takes the gateway's flags.
 * @param {"gateway" | "maintenance" | "mailer" | "all-in-one"} service
 * @param {Record<string, string | undefined>} env
 * @returns {string[]}
 */
export function nodeFlagsFor(service, env = process.env) {
  if (service !== "all-in-one") return [...SERVICE_NODE_FLAGS[service]];
  const roles = (env.SERVICES ?? "").split(",").map((role) => role.trim()).filter(Boolean);
  const hostsGateway = roles.length === 0 || roles.includes("all") || roles.includes("gateway");
  return hostsGateway ? [...GATEWAY_NODE_FLAGS] : [];
}
