/** The claims of a JWT, decoded without verification (tests only). */
export function claimsOf(token: string): { user_id: number; role: string; iat: number; exp: number; jti: string } {
  const payload = token.split(".")[1];
  if (!payload) throw new Error("not a JWT");
  return JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as ReturnType<typeof claimsOf>;
}

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
