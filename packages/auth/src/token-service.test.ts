import { createHmac } from "node:crypto";
import { createTokenService, InvalidTokenError, issuedAtMsFromJti } from "./token-service.js";

const SECRET = "s".repeat(32);
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

function reasonOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    if (error instanceof InvalidTokenError) return error.reason;
    throw error;
  }
  return "accepted";
}

describe("token service", () => {
  const tokens = createTokenService({ secret: SECRET, ttlMinutes: 15 });

  it("refuses a secret shorter than 32 bytes", () => {
    expect(() => createTokenService({ secret: "s".repeat(31), ttlMinutes: 15 })).toThrow(/32 bytes/);
  });

  it("signs the contract's claims with HS256 and verifies them back", () => {
    const { token, claims } = tokens.sign({ userId: 7, role: "user" });
    const header = JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString()) as { alg: string };
    expect(header.alg).toBe("HS256");
    const payload = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()) as Record<string, unknown>;
    expect(Object.keys(payload).sort()).toEqual(["exp", "iat", "jti", "role", "user_id"]);
    expect(claims.exp - claims.iat).toBe(15 * 60);
    expect(tokens.verify(token)).toEqual(claims);
  });

  it("carries the issue time in milliseconds in the jti (UUIDv7)", () => {
    const before = Date.now();
    const { claims } = tokens.sign({ userId: 1, role: "admin" });
    expect(claims.issuedAtMs).toBeGreaterThanOrEqual(before);
    expect(claims.issuedAtMs).toBeLessThanOrEqual(Date.now());
    expect(issuedAtMsFromJti(claims.jti)).toBe(claims.issuedAtMs);
    expect(Math.floor(claims.issuedAtMs / 1000)).toBe(claims.iat);
    expect(issuedAtMsFromJti("0f0e3d6a-1c9b-4d1e-8a3b-2f4c5d6e7f80")).toBeNull();
  });

  it("issues after a cutoff in the future (another instance's clock ahead)", () => {
    const cutoff = Date.now() + 5_000;
    const { claims } = tokens.sign({ userId: 1, role: "user" }, cutoff + 1);
    expect(claims.issuedAtMs).toBe(cutoff + 1);
  });

  it("tells the failure apart", () => {
    const { claims } = tokens.sign({ userId: 3, role: "user" });
    const hs = (header: object, payload: object, algorithm = "sha256") => {
      const input = `${b64(header)}.${b64(payload)}`;
      return `${input}.${createHmac(algorithm, SECRET).update(input).digest("base64url")}`;
    };
    expect(reasonOf(() => tokens.verify(""))).toBe("missing");
    expect(reasonOf(() => tokens.verify("abc"))).toBe("malformed");
    expect(reasonOf(() => tokens.verify(hs({ alg: "HS256" }, claims)))).toBe("accepted");
    expect(reasonOf(() => tokens.verify(hs({ alg: "HS512" }, claims, "sha512")))).toBe("signature");
    expect(reasonOf(() => tokens.verify(`${b64({ alg: "none" })}.${b64(claims)}.`))).not.toBe("accepted");
    expect(reasonOf(() => tokens.verify(hs({ alg: "HS256" }, { ...claims, exp: Math.floor(Date.now() / 1000) - 1 })))).toBe("expired");
    expect(reasonOf(() => tokens.verify(hs({ alg: "HS256" }, { ...claims, role: "owner" })))).toBe("claims");
    expect(reasonOf(() => tokens.verify(hs({ alg: "HS256" }, { ...claims, user_id: 1.5 })))).toBe("claims");
  });
});
