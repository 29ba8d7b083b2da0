import { findPeerBinary, peerBinariesAvailable } from "../index.js";

describe("peerBinariesAvailable", () => {
  const saved = process.env.CI;
  afterEach(() => {
    if (saved === undefined) delete process.env.CI;
    else process.env.CI = saved;
  });

  it("finds installed binaries, sbin folders included", () => {
    expect(findPeerBinary("sh")).toMatch(/\/sh$/);
    expect(findPeerBinary("roost-no-such-peer")).toBeNull();
    expect(peerBinariesAvailable("sh")).toBe(true);
  });

  it("skips locally when a binary is missing", () => {
    delete process.env.CI;
    const warnings: unknown[] = [];
    const warn = console.warn;
    console.warn = (...args: unknown[]) => warnings.push(...args);
    try {
      expect(peerBinariesAvailable("sh", "roost-no-such-peer")).toBe(false);
      expect(warnings).toEqual([expect.stringContaining("roost-no-such-peer")]);
    } finally {
      console.warn = warn;
    }
  });

  it("fails under CI=true, so a missing apt step cannot turn the suite green", () => {
    process.env.CI = "true";
    expect(() => peerBinariesAvailable("roost-no-such-peer")).toThrow(/roost-no-such-peer/);
  });
});
