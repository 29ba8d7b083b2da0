import { createHmac } from "node:crypto";
import jwt from "jsonwebtoken";
import { createTokenService, InvalidTokenError, issuedAtMsFromJti, VERIFIED_TOKEN_CACHE_SIZE } from "./token-service.js";

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

  describe("remembered verifications", () => {
    const realVerify = jwt.verify;
    const realNow = Date.now;
    let signatureChecks = 0;
    beforeEach(() => {
      signatureChecks = 0;
      // Counts the calls that reach jsonwebtoken (the signature path).
      jwt.verify = ((...args: Parameters<typeof realVerify>) => {
        signatureChecks++;
        return realVerify(...args);
      }) as typeof jwt.verify;
    });
    afterEach(() => {
      jwt.verify = realVerify;
      Date.now = realNow;
    });

    it("answers a token it verified before without verifying the signature again, until it expires", () => {
      const service = createTokenService({ secret: SECRET, ttlMinutes: 15 });
      const { token, claims } = service.sign({ userId: 9, role: "user" });
      expect(service.verify(token)).toEqual(claims);
      expect(service.verify(token)).toEqual(claims);
      expect(signatureChecks).toBe(1);
      // One millisecond before exp it is still good; at exp it is expired, as jsonwebtoken decides.
      Date.now = () => claims.exp * 1000 - 1;
      expect(reasonOf(() => service.verify(token))).toBe("accepted");
      Date.now = () => claims.exp * 1000;
      expect(reasonOf(() => service.verify(token))).toBe("expired");
      // Forgotten once expired: the signature path answers from now on.
      expect(reasonOf(() => service.verify(token))).toBe("expired");
      expect(signatureChecks).toBe(2);
    });

    it("never answers a token that differs from a remembered one, even only in its signature", () => {
      const service = createTokenService({ secret: SECRET, ttlMinutes: 15 });
      const { token } = service.sign({ userId: 9, role: "user" });
      service.verify(token);
      const [header, payload, signature = ""] = token.split(".");
      const forged = `${header}.${payload}.${signature.slice(0, -2)}${signature.endsWith("AA") ? "BB" : "AA"}`;
      expect(reasonOf(() => service.verify(forged))).toBe("signature");
      // Another service (another secret) shares nothing.
      const other = createTokenService({ secret: "t".repeat(32), ttlMinutes: 15 });
      expect(reasonOf(() => other.verify(token))).toBe("signature");
    });

    it("keeps at most VERIFIED_TOKEN_CACHE_SIZE tokens, forgetting the oldest first", () => {
      const service = createTokenService({ secret: SECRET, ttlMinutes: 15 });
      const tokens = Array.from({ length: VERIFIED_TOKEN_CACHE_SIZE + 1 }, (_, i) => service.sign({ userId: i + 1, role: "user" }).token);
      for (const token of tokens) service.verify(token);
      signatureChecks = 0;
      service.verify(tokens[tokens.length - 1]!);
      service.verify(tokens[1]!);
      expect(signatureChecks).toBe(0);
      expect(service.verify(tokens[0]!).user_id).toBe(1);
      expect(signatureChecks).toBe(1);
    });
  });
});
