/**
 * Merges a partial update into a config: objects merge key by key, arrays and
 * scalars replace. Omitted keys keep their current values (never reset).
 */
export function deepMerge(current: unknown, update: unknown): unknown {
  if (!isPlainObject(current) || !isPlainObject(update)) return update === undefined ? current : update;
  const out: Record<string, unknown> = { ...current };
  for (const [key, value] of Object.entries(update)) {
    out[key] = key in current ? deepMerge(current[key], value) : value;
  }
  return out;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
