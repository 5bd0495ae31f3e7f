/**
 * A deep copy of a JSON-like value, frozen throughout, made in one pass. The memory store keeps
 * what callers hand it this way: the caller's objects stay theirs, and the stored copy can be
 * given to every reader without copying again and without anyone changing it behind the
 * store's back. Typed arrays are copied but cannot be frozen; other non-plain objects (Date,
 * Map, ...) go through `structuredClone` and are then frozen.
 */
export function frozenCopy<T>(value: T): T {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    const out = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = frozenCopy(value[i]);
    return Object.freeze(out) as T;
  }
  if (ArrayBuffer.isView(value)) return structuredClone(value);
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return freezeDeep(structuredClone(value));
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) out[key] = frozenCopy((value as Record<string, unknown>)[key]);
  return Object.freeze(out) as T;
}

function freezeDeep<T>(value: T): T {
  if (typeof value !== "object" || value === null || ArrayBuffer.isView(value) || Object.isFrozen(value)) return value;
  for (const key of Object.keys(value)) freezeDeep((value as Record<string, unknown>)[key]);
  return Object.freeze(value);
}
