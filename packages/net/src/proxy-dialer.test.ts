import { basicProxyAuthorization, OutboundBlockedError, OutboundGuard } from "./index.js";
import { targetHost } from "./proxy-dialer.js";

describe("targetHost", () => {
  const guard = new OutboundGuard();

  it("passes names unresolved and writes literals canonically", () => {
    expect(targetHost(guard, "judge.example")).toBe("judge.example");
    expect(targetHost(guard, "azenv.net.")).toBe("azenv.net.");
    expect(targetHost(guard, "xn--bcher-kva.example")).toBe("xn--bcher-kva.example");
    expect(targetHost(guard, "0x08080808")).toBe("8.8.8.8");
    expect(targetHost(guard, "[2606:4700::1111]")).toBe("2606:4700::1111");
  });

  it("refuses reserved literals", () => {
    expect(() => targetHost(guard, "2130706433")).toThrow(OutboundBlockedError);
    expect(() => targetHost(guard, "[::ffff:169.254.169.254]")).toThrow(OutboundBlockedError);
  });

  it.each(["judge.example\r\nX-Injected: 1", "a b", "user@host", "host/path", "", ".", "a..b", "x".repeat(254)])("refuses %j, which is no host name", (host) => {
    expect(() => targetHost(guard, host)).toThrow(TypeError);
  });
});

describe("basicProxyAuthorization", () => {
  it("encodes user:password, and gives nothing without credentials", () => {
    expect(basicProxyAuthorization({ protocol: "http", host: "1.2.3.4", port: 8080, username: "alice", password: "s3:cret" })).toBe(
      `Basic ${Buffer.from("alice:s3:cret").toString("base64")}`,
    );
    expect(basicProxyAuthorization({ protocol: "http", host: "1.2.3.4", port: 8080, username: "", password: "" })).toBeUndefined();
    expect(basicProxyAuthorization({ protocol: "http", host: "1.2.3.4", port: 8080 })).toBeUndefined();
  });
});
