import { z } from "zod";
import { databaseLimitsEnv, envBool, envInt, envLogLevel, envNodeEnv, envOptionalInt, envOptionalString, envString, loadConfig } from "@roost/config";

/** Variables the rotator reads (besides DATABASE_URL/REDIS_URL, given by main or all-in-one). */
export const rotatorEnvSchema = z.object({
  QUEUE_PREFIX: envString("roost"),
  /** Where the instance id, the password key and the self-signed certificate are kept. */
  DATA_DIR: envString("./.data"),
  /** Lets the rotator dial upstreams and targets on private, loopback and link-local addresses. */
  ALLOW_PRIVATE_NETWORK_TARGETS: envBool(false),
  /** Stable instance id; unset: one generated once and kept in DATA_DIR. */
  ROTATOR_INSTANCE_ID: envOptionalString(),
  /** Shown in the instance list; unset: the host name. */
  ROTATOR_INSTANCE_NAME: envOptionalString(),
  /** Shown in the instance list; unset: `default`. */
  ROTATOR_INSTANCE_REGION: envOptionalString(),
  /** Interface the rotator listeners bind. */
  ROTATING_PROXY_LISTEN_HOST: envString("127.0.0.1"),
  /** Host clients dial for this instance; unset: the listen host. */
  ROTATING_PROXY_PUBLIC_HOST: envOptionalString(),
  /** Listener port range of this instance; unset: `rotating_proxies` in global config. */
  ROTATING_PROXY_PORT_START: envOptionalInt(1, 65535),
  ROTATING_PROXY_PORT_END: envOptionalInt(1, 65535),
  /** PEM files of the https listeners; unset: a self-signed pair kept in DATA_DIR. */
  ROTATOR_TLS_CERT_FILE: envOptionalString(),
  ROTATOR_TLS_KEY_FILE: envOptionalString(),
  /** HMAC key of rotator passwords, the same on the gateway and every rotator; unset: one kept in DATA_DIR. */
  ROTATOR_PASSWORD_KEY: envOptionalString(),
  /** Seconds between full reloads of this instance's rotators and their pools (pub/sub brings changes sooner). */
  ROTATOR_REFRESH_SECONDS: envInt(60, 1, 3600),
  /** Seconds between registrations in Redis; the registration lives three times as long. */
  ROTATOR_HEARTBEAT_SECONDS: envInt(10, 1, 300),
  /** Milliseconds for one upstream's connect and handshake before the next is tried. */
  ROTATOR_UPSTREAM_TIMEOUT_MS: envInt(10_000, 100, 120_000),
  /** Milliseconds a plain HTTP request waits for the upstream's response head once sent whole; then 504. */
  ROTATOR_RESPONSE_TIMEOUT_MS: envInt(30_000, 100, 600_000),
  /** Milliseconds a CONNECT or SOCKS tunnel may carry no byte either way before it is closed. */
  ROTATOR_TUNNEL_IDLE_TIMEOUT_MS: envInt(600_000, 1_000, 86_400_000),
  /** Upstreams tried for one request or tunnel before the client gets 502 or a SOCKS failure. */
  ROTATOR_MAX_UPSTREAM_ATTEMPTS: envInt(3, 1, 10),
}).superRefine((env, ctx) => {
  const start = env.ROTATING_PROXY_PORT_START;
  const end = env.ROTATING_PROXY_PORT_END;
  if ((start === undefined) !== (end === undefined)) ctx.addIssue({ code: "custom", path: [start === undefined ? "ROTATING_PROXY_PORT_START" : "ROTATING_PROXY_PORT_END"], message: "set both ends of the range, or neither" });
  else if (start !== undefined && end !== undefined && start > end) ctx.addIssue({ code: "custom", path: ["ROTATING_PROXY_PORT_END"], message: "must not be below ROTATING_PROXY_PORT_START" });
});

export type RotatorConfig = z.output<typeof rotatorEnvSchema>;

export function rotatorConfigFromEnv(env: Record<string, string | undefined> = process.env): RotatorConfig {
  return loadConfig(rotatorEnvSchema, env);
}

/** Connection settings when the rotator runs alone (all-in-one passes its own). */
export const rotatorInfraSchema = z.object({
  DATABASE_URL: envOptionalString(),
  ...databaseLimitsEnv,
  REDIS_URL: envOptionalString(),
  /** Checked as the gateway checks it: a value other than development, production or test stops the boot. */
  NODE_ENV: envNodeEnv,
  LOG_LEVEL: envLogLevel(),
  /** Port for /metrics and /healthz when the rotator runs alone; unset = no listener. */
  ROTATOR_METRICS_PORT: envOptionalInt(0, 65535),
  /** Interface for that listener; 127.0.0.1. */
  ROTATOR_METRICS_HOST: envString("127.0.0.1"),
});

export function rotatorInfraFromEnv(env: Record<string, string | undefined> = process.env) {
  return loadConfig(rotatorInfraSchema, env);
}
