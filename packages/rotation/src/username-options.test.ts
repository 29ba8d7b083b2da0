import { parseUsernameOptions } from "./username-options.js";

describe("parseUsernameOptions", () => {
  it("returns a plain username unchanged", () => {
    expect(parseUsernameOptions("alice")).toEqual({ user: "alice" });
    expect(parseUsernameOptions("team-alpha")).toEqual({ user: "team-alpha" });
  });

  it("takes session and country in either order", () => {
    expect(parseUsernameOptions("alice-session-abc1")).toEqual({ user: "alice", session: "abc1" });
    expect(parseUsernameOptions("alice-country-de")).toEqual({ user: "alice", country: "DE" });
    expect(parseUsernameOptions("alice-session-s_1-country-us")).toEqual({ user: "alice", session: "s_1", country: "US" });
    expect(parseUsernameOptions("alice-country-us-session-s_1")).toEqual({ user: "alice", session: "s_1", country: "US" });
  });

  it("accepts options without a user (rotators without auth)", () => {
    expect(parseUsernameOptions("session-x-country-fr")).toEqual({ user: "", session: "x", country: "FR" });
    expect(parseUsernameOptions("")).toEqual({ user: "" });
  });

  it("refuses a malformed country or a repeated option", () => {
    expect(parseUsernameOptions("alice-country-usa")).toBeUndefined();
    expect(parseUsernameOptions("alice-session-a-session-b")).toBeUndefined();
    expect(parseUsernameOptions("alice-country-us-country-de")).toBeUndefined();
  });
});
