import { deepMerge, pickKnownKeys } from "./deep-merge.js";

describe("deepMerge", () => {
  it("merges objects key by key and keeps omitted keys", () => {
    const current = { a: { x: 1, y: 2 }, b: [1, 2], c: "keep" };
    expect(deepMerge(current, { a: { y: 3 } })).toEqual({ a: { x: 1, y: 3 }, b: [1, 2], c: "keep" });
    expect(current).toEqual({ a: { x: 1, y: 2 }, b: [1, 2], c: "keep" });
  });

  it("replaces arrays and scalars, and lets a wrong type through for the schema to refuse", () => {
    expect(deepMerge({ b: [1, 2] }, { b: [3] })).toEqual({ b: [3] });
    expect(deepMerge({ a: { x: 1 } }, { a: "text" })).toEqual({ a: "text" });
    expect(deepMerge({ a: { x: 1 } }, { a: null })).toEqual({ a: null });
    expect(deepMerge({ a: 1 }, undefined)).toEqual({ a: 1 });
  });

  it("keeps __proto__ and constructor as plain own keys instead of touching a prototype", () => {
    const patch: unknown = JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"bad": 1}}}');
    const merged = deepMerge({ a: 1 }, patch) as Record<string, unknown>;
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    expect(Object.keys(merged).sort()).toEqual(["__proto__", "a", "constructor"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((merged as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it("does not treat inherited properties as existing keys", () => {
    const merged = deepMerge({}, { toString: { x: 1 } }) as Record<string, unknown>;
    expect(merged.toString).toEqual({ x: 1 });
  });
});

describe("pickKnownKeys", () => {
  it("drops keys the template does not know, recursively, and keeps values as they are", () => {
    const template = { a: { x: 0, y: 0 }, list: [0] };
    expect(pickKnownKeys({ a: { x: 5, old: 1 }, list: [7, 8], gone: true }, template)).toEqual({ a: { x: 5 }, list: [7, 8] });
    expect(pickKnownKeys("not an object", template)).toBe("not an object");
  });
});
