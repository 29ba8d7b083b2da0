import { hashRotatorPassword, verifyRotatorPassword } from "./rotator-password.js";

describe("rotator passwords", () => {
  const key = "server-key";

  it("verifies the password it hashed and nothing else", () => {
    const stored = hashRotatorPassword(key, "s3cret");
    expect(stored).toMatch(/^[0-9a-f]{64}$/);
    expect(verifyRotatorPassword(key, "s3cret", stored)).toBe(true);
    expect(verifyRotatorPassword(key, "s3cret ", stored)).toBe(false);
    expect(verifyRotatorPassword("other-key", "s3cret", stored)).toBe(false);
    expect(verifyRotatorPassword(key, "s3cret", "not-hex")).toBe(false);
  });
});
