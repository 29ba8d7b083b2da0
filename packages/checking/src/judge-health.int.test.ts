import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { OutboundGuard } from "@roost/net";
import { createLogger } from "@roost/observability";
import { JudgeHealth, judgeLabel } from "./judge-health.js";

/** Judge health against a real local judge and addresses where nothing listens: labels, the 100-judge cap, recovery. */
describe("JudgeHealth", () => {
  let server: Server;
  let port: number;
  const listen = (at: number): Promise<void> => new Promise((resolve) => server.listen(at, "127.0.0.1", resolve));
  beforeAll(async () => {
    server = createServer((_request, response) => response.writeHead(200, { "content-type": "text/plain" }).end("HTTP_HOST = judge\n"));
    await listen(0);
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    if (server.listening) await new Promise((resolve) => server.close(resolve));
  });

  it("labels a judge scheme://host:port, never its path, query or credentials", () => {
    expect(judgeLabel("https://user:pw@judge.example/check.php?key=s3cret")).toBe("https://judge.example:443");
    expect(judgeLabel("http://judge.example/")).toBe("http://judge.example:80");
    expect(judgeLabel("http://judge.example:8080/a/b?c=d#e")).toBe("http://judge.example:8080");
  });

  it("reports global judges and the first 100 user judges by label and the rest as the share up, and a judge comes back by itself", async () => {
    const reported = new Map<string, number>();
    const health = new JudgeHealth(new OutboundGuard({ allowPrivateNetworkTargets: true }), createLogger({ silent: true }), {
      timeoutMs: 2000,
      report: (label, up) => reported.set(label, up),
    });
    const global = `http://127.0.0.1:${port}/judge.php?key=s3cret`;
    // Nothing listens on 127.0.0.2.. at the judge's port: the first 100 user judges are down.
    const labelled = Array.from({ length: 100 }, (_, i) => `http://127.0.0.${i + 2}:${port}/j?token=t${i}`);
    const past = [`http://127.0.0.1:${port}/past-the-cap-up`, `http://127.0.0.200:${port}/past-the-cap-down`];
    await health.probeAll([global], [...labelled, ...past]);

    const own = `http://127.0.0.1:${port}`;
    expect(reported.get(own)).toBe(1);
    for (const url of labelled) expect([url, reported.get(judgeLabel(url))]).toEqual([url, 0]);
    expect(reported.get("other")).toBe(0.5);
    expect(reported.size).toBe(1 + 100 + 1);
    expect([...reported.keys()].filter((label) => /[/?]|s3cret|token/.test(label.replace(/^https?:\/\//, "")))).toEqual([]);
    expect(health.isUp(global)).toBe(true);
    expect(health.isUp(labelled[0] ?? "")).toBe(false);

    // The judge stops: marked down; it answers again: up again, with no other call than the next probe.
    await new Promise((resolve) => server.close(resolve));
    await health.probeAll([global], []);
    expect([health.isUp(global), reported.get(own)]).toEqual([false, 0]);
    await listen(port);
    await health.probeAll([global], []);
    expect([health.isUp(global), reported.get(own)]).toEqual([true, 1]);
  });
});
