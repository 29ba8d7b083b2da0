import { ConfigError } from "@roost/config";

import { rotatorConfigFromEnv } from "./rotator.config.js";

describe("rotator config", () => {
  it("has defaults that bind loopback", () => {
    expect(rotatorConfigFromEnv({})).toMatchObject({ ROTATING_PROXY_LISTEN_HOST: "127.0.0.1", ROTATOR_REFRESH_SECONDS: 60, ROTATOR_HEARTBEAT_SECONDS: 10, ROTATOR_MAX_UPSTREAM_ATTEMPTS: 3, ROTATOR_RESPONSE_TIMEOUT_MS: 30_000, ROTATOR_TUNNEL_IDLE_TIMEOUT_MS: 600_000 });
  });

  it("names the variable of a bad port range", () => {
    expect(() => rotatorConfigFromEnv({ ROTATING_PROXY_PORT_START: "20000" })).toThrow(/ROTATING_PROXY_PORT_END: set both ends/);
    expect(() => rotatorConfigFromEnv({ ROTATING_PROXY_PORT_START: "20010", ROTATING_PROXY_PORT_END: "20000" })).toThrow(ConfigError);
    expect(() => rotatorConfigFromEnv({ ROTATOR_UPSTREAM_TIMEOUT_MS: "5" })).toThrow(/ROTATOR_UPSTREAM_TIMEOUT_MS/);
    expect(() => rotatorConfigFromEnv({ ROTATOR_RESPONSE_TIMEOUT_MS: "0" })).toThrow(/ROTATOR_RESPONSE_TIMEOUT_MS/);
    expect(() => rotatorConfigFromEnv({ ROTATOR_TUNNEL_IDLE_TIMEOUT_MS: "999" })).toThrow(/ROTATOR_TUNNEL_IDLE_TIMEOUT_MS/);
    expect(rotatorConfigFromEnv({ ROTATING_PROXY_PORT_START: "20000", ROTATING_PROXY_PORT_END: "20000" })).toMatchObject({ ROTATING_PROXY_PORT_START: 20000, ROTATING_PROXY_PORT_END: 20000 });
  });
});
