/**
 * Merges a partial update into a config: objects merge key by key, arrays and
 * scalars replace. Omitted keys keep their current values (never reset).
 *
 * Only own properties count, and keys are written as own data properties, so
 * a JSON body carrying `__proto__` or `constructor` stays an ordinary (and, for
 * a strict schema, unknown) key instead of reaching a prototype.
 */
export function deepMerge(current: unknown, update: unknown): unknown {
  if (!isPlainObject(current) || !isPlainObject(update)) return update === undefined ? current : update;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(current)) defineOwn(out, key, value);
  for (const [key, value] of Object.entries(update)) {
    defineOwn(out, key, Object.hasOwn(current, key) ? deepMerge(current[key], value) : value);
  }
  return out;
}

/**
 * Keeps only the keys `template` knows, recursively through plain objects
 * (arrays and scalars are taken as they are). Used on stored documents so a
 * key removed in a newer version does not invalidate the whole config.
 */
export function pickKnownKeys(value: unknown, template: unknown): unknown {
  if (!isPlainObject(template) || !isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(template)) {
    if (Object.hasOwn(value, key)) defineOwn(out, key, pickKnownKeys(value[key], template[key]));
  }
  return out;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function defineOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
