import { hash, verify } from "@node-rs/argon2";

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(hashed: string, password: string): Promise<boolean>;
}

export interface PasswordHashCost {
  /** KiB of memory per hash; default 19456 (OWASP's argon2id baseline). */
  memoryCostKiB?: number;
  /** Iterations; default 2. */
  timeCost?: number;
}

/** argon2id; the cost is configurable so tests can stay fast. */
export function createPasswordHasher(cost: PasswordHashCost = {}): PasswordHasher {
  const options = {
    algorithm: 2 as const, // Algorithm.Argon2id (a const enum, which isolatedModules cannot import)
    memoryCost: cost.memoryCostKiB ?? 19456,
    timeCost: cost.timeCost ?? 2,
    parallelism: 1,
  };
  return {
    hash: (password) => hash(password, options),
    async verify(hashed, password) {
      try {
        return await verify(hashed, password);
      } catch {
        return false;
      }
    },
  };
}
