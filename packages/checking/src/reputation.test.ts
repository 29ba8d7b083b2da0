import { labelOf, protocolScore, pushResult, reputationOf, uptimeCount, type ProtocolWindow } from "./reputation.js";

/** A window from results oldest first, as the checker pushes them. */
function windowOf(results: boolean[], latest: Partial<ProtocolWindow> = {}): ProtocolWindow {
  let state = { history: 0n, length: 0 };
  for (const alive of results) state = pushResult(state.history, state.length, alive);
  const alive = results[results.length - 1] ?? false;
  return { ...state, alive, responseMs: alive ? 500 : 0, anonymity: alive ? "elite" : "N/A", ...latest };
}

describe("reputation", () => {
  it("worked example: alive on each of its first 3 checks, elite, under 1 s, is good (100)", () => {
    expect(protocolScore(windowOf([true, true, true], { responseMs: 800 }))).toBe(100);
    expect(labelOf(100)).toBe("good");
  });

  it("worked example: dead on each of its first 3 checks is poor (4)", () => {
    // uptime 0, recency 0, latency 0, anonymity 0, streak 3 of 5: 100 x 0.10 x (1 - 3/5) = 4.
    expect(protocolScore(windowOf([false, false, false]))).toBe(4);
    expect(labelOf(4)).toBe("poor");
  });

  it.each([
    ["unknown under 3 results", [true, true], null],
    ["alternating, ending alive, anonymous at 2 s", [false, true, false, true, false, true], 64.49],
    ["alternating, ending dead", [true, false, true, false, true, false], 37.34],
    ["long good history, two recent failures", [...Array<boolean>(30).fill(true), false, false], 58.89],
    ["recovered: failures long ago", [false, false, false, ...Array<boolean>(20).fill(true)], 88.36],
  ])("%s", (_what, results, score) => {
    const alive = results[results.length - 1] ?? false;
    expect(protocolScore(windowOf(results, alive ? { responseMs: 2000, anonymity: "anonymous" } : {}))).toBe(score);
  });

  it("labels good from 70, neutral from 40, else poor, and unknown without a score", () => {
    expect([100, 70, 69.99, 40, 39.99, 0].map(labelOf)).toEqual(["good", "good", "neutral", "neutral", "poor", "poor"]);
    expect(labelOf(null)).toBe("unknown");
  });

  it.each([
    ["alternating, ending alive, anonymous at 2 s", [false, true, false, true, false, true], "neutral"],
    ["alternating, ending dead", [true, false, true, false, true, false], "poor"],
    ["long good history, two recent failures", [...Array<boolean>(30).fill(true), false, false], "neutral"],
    ["recovered: failures long ago", [false, false, false, ...Array<boolean>(20).fill(true)], "good"],
  ])("the documented label of %s: %s", (_what, results, label) => {
    const alive = results[results.length - 1] ?? false;
    const window = windowOf(results, alive ? { responseMs: 2000, anonymity: "anonymous" } : {});
    expect(reputationOf(new Map([["http", window]])).overall.label).toBe(label);
  });

  it("keeps the last 64 results and counts them with one pass", () => {
    let state = { history: 0n, length: 0 };
    for (let i = 0; i < 100; i++) state = pushResult(state.history, state.length, i % 4 !== 0);
    expect(state.length).toBe(64);
    expect(uptimeCount(state.history, state.length)).toBe(48);
  });

  it("overall is the best protocol's, unknown when none has 3 results", () => {
    const windows = new Map([
      ["http", windowOf([false, false, false])],
      ["socks5", windowOf([true, true, true], { responseMs: 300 })],
    ]);
    const { overall, protocols } = reputationOf(windows);
    expect(overall).toEqual({ score: 100, label: "good" });
    expect(protocols.get("http")).toEqual({ score: 4, label: "poor" });
    expect(reputationOf(new Map([["http", windowOf([true])]])).overall).toEqual({ score: 0, label: "unknown" });
  });
});
