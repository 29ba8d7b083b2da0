import { OutboundGuard } from "@roost/net";

import { checkTarget } from "./request-target.js";

describe("checkTarget", () => {
  it("gives the URL's host and the guard's verdict, as the URL parser reads the target", () => {
    const guard = new OutboundGuard();
    expect(checkTarget(guard, "http://93.184.216.34/a?b")).toEqual({ host: "93.184.216.34", blocked: false });
    expect(checkTarget(guard, "http://EXAMPLE.com:80/x")).toEqual({ host: "example.com", blocked: false });
    expect(checkTarget(guard, "http://127.0.0.1:8080/")).toEqual({ host: "127.0.0.1:8080", blocked: true });
    // Numeric forms the URL parser normalises still reach the guard as addresses.
    expect(checkTarget(guard, "http://127.1/")?.blocked).toBe(true);
    expect(checkTarget(guard, "http://0x7f.1/")?.blocked).toBe(true);
    expect(checkTarget(guard, "http://[::1]:81/")).toEqual({ host: "[::1]:81", blocked: true });
    expect(checkTarget(guard, "http://user@127.0.0.1/")?.blocked).toBe(true);
    expect(checkTarget(guard, "http://93.184.216.34\\@127.0.0.1/")?.blocked).toBe(false);
  });

  it("refuses what is no absolute http URL", () => {
    const guard = new OutboundGuard();
    for (const target of ["/relative", "https://example.com/", "HTTP://example.com/", "http://", "http://exa mple.com/", "http://[::1/"]) expect(checkTarget(guard, target)).toBeUndefined();
  });

  it("keeps a verdict per authority and guard, whatever the path", () => {
    const open = new OutboundGuard({ allowPrivateNetworkTargets: true });
    const closed = new OutboundGuard();
    const first = checkTarget(open, "http://127.0.0.1:9/a");
    expect(first?.blocked).toBe(false);
    expect(checkTarget(open, "http://127.0.0.1:9/b?c")).toBe(first);
    expect(checkTarget(closed, "http://127.0.0.1:9/a")?.blocked).toBe(true);
    // Userinfo is never part of the key: the host behind it is parsed each time.
    expect(checkTarget(closed, "http://127.0.0.1:9@example.com/")).toEqual({ host: "example.com", blocked: false });
  });
});
