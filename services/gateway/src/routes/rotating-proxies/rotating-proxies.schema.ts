import { PROXY_PROTOCOLS, type ProxyProtocol } from "@roost/inventory";
import { parseUsernameOptions } from "@roost/rotation";

export const ROTATOR_REPUTATION_LABELS = ["good", "neutral", "poor"] as const;
export const TRANSPORTS = ["tcp"] as const;
export const MAX_NAME_LENGTH = 120;

/** A create request after validation; the password is still plain here and hashed by the service. */
export interface RotatorCreate {
  name: string;
  instanceId: string;
  protocol: ProxyProtocol;
  listenProtocol: ProxyProtocol;
  authRequired: boolean;
  authUsername: string | null;
  authPassword: string | null;
  reputationLabels: string[];
  uptimeFilterType: "min" | "max" | null;
  uptimePercentage: number | null;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

const isProtocol = (value: unknown): value is ProxyProtocol => typeof value === "string" && (PROXY_PROTOCOLS as readonly string[]).includes(value);
const absent = (value: unknown): boolean => value === undefined || value === null || value === "";

/**
 * The create body, rule by rule in the contract's order (400 per rule). What
 * needs state (instances, the user's protocols, open listeners) is checked by the service.
 */
export function parseRotatorCreate(body: unknown): Parsed<RotatorCreate> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return { ok: false, error: "Expected a JSON object" };
  const b = body as Record<string, unknown>;
  const fail = (error: string): Parsed<RotatorCreate> => ({ ok: false, error });

  if (typeof b.name !== "string" || b.name.trim() === "") return fail("name is required");
  const name = b.name.trim();
  if (name.length > MAX_NAME_LENGTH) return fail(`name must be at most ${MAX_NAME_LENGTH} characters`);
  if (typeof b.instance_id !== "string" || b.instance_id.trim() === "") return fail("instance_id is required");
  if (absent(b.protocol)) return fail("protocol is required");
  if (!isProtocol(b.protocol)) return fail(`protocol must be one of ${PROXY_PROTOCOLS.join(", ")}`);
  const listenProtocol = absent(b.listen_protocol) ? b.protocol : b.listen_protocol;
  if (!isProtocol(listenProtocol)) return fail(`listen_protocol must be one of ${PROXY_PROTOCOLS.join(", ")}`);
  for (const field of ["transport_protocol", "listen_transport_protocol"] as const) {
    const value = b[field];
    if (!absent(value) && value !== "tcp") return fail(`${field} must be tcp (other transports are not supported yet)`);
  }

  if (b.auth_required !== undefined && b.auth_required !== null && typeof b.auth_required !== "boolean") return fail("auth_required must be a boolean");
  const authRequired = b.auth_required === true;
  let authUsername: string | null = null;
  let authPassword: string | null = null;
  if (authRequired) {
    if (typeof b.auth_username !== "string" || b.auth_username === "" || typeof b.auth_password !== "string" || b.auth_password === "") {
      return fail("auth_username and auth_password are required when auth_required is true");
    }
    // The username is followed by -session-/-country- options and split at ':' by Basic auth.
    if (b.auth_username.includes(":") || parseUsernameOptions(b.auth_username)?.user !== b.auth_username || b.auth_username.length > 64) {
      return fail("auth_username must be at most 64 characters, without ':' and without a -session- or -country- suffix");
    }
    if (b.auth_password.length > 255) return fail("auth_password must be at most 255 characters");
    authUsername = b.auth_username;
    authPassword = b.auth_password;
  }

  let reputationLabels: string[] = [];
  if (b.reputation_labels !== undefined && b.reputation_labels !== null) {
    if (!Array.isArray(b.reputation_labels) || !b.reputation_labels.every((label): label is string => typeof label === "string" && (ROTATOR_REPUTATION_LABELS as readonly string[]).includes(label))) {
      return fail(`reputation_labels accepts ${ROTATOR_REPUTATION_LABELS.join(", ")}`);
    }
    reputationLabels = [...new Set(b.reputation_labels)];
  }

  let uptimeFilterType: "min" | "max" | null = null;
  let uptimePercentage: number | null = null;
  const typeGiven = !absent(b.uptime_filter_type);
  const percentageGiven = b.uptime_percentage !== undefined && b.uptime_percentage !== null;
  if (typeGiven || percentageGiven) {
    if (!typeGiven || !percentageGiven) return fail("uptime_filter_type and uptime_percentage must be given together");
    if (b.uptime_filter_type !== "min" && b.uptime_filter_type !== "max") return fail("uptime_filter_type must be min or max");
    if (typeof b.uptime_percentage !== "number" || !Number.isInteger(b.uptime_percentage) || b.uptime_percentage < 0 || b.uptime_percentage > 100) {
      return fail("uptime_percentage must be an integer from 0 to 100");
    }
    uptimeFilterType = b.uptime_filter_type;
    uptimePercentage = b.uptime_percentage;
  }

  return {
    ok: true,
    value: { name, instanceId: b.instance_id.trim(), protocol: b.protocol, listenProtocol, authRequired, authUsername, authPassword, reputationLabels, uptimeFilterType, uptimePercentage },
  };
}

/** A rotator as listed (contract "Rotating proxy (as listed)"); never carries the password. */
export interface RotatorView {
  id: number;
  name: string;
  instance_id: string;
  instance_name: string;
  instance_region: string;
  protocol: string;
  listen_protocol: string;
  transport_protocol: string;
  listen_transport_protocol: string;
  uptime_filter_type?: string;
  uptime_percentage?: number;
  alive_proxy_count: number;
  listen_port: number;
  auth_required: boolean;
  listen_host: string;
  listen_address: string;
  reputation_labels: string[];
  created_at: string;
}

export interface InstanceView {
  id: string;
  name: string;
  region: string;
  port_start: number;
  port_end: number;
  used_ports: number;
  free_ports: number;
  total_ports: number;
}

export interface NextUpstreamView {
  proxy_id: number;
  ip: string;
  port: number;
  username: string;
  password: string;
  has_auth: boolean;
  protocol: string;
}
