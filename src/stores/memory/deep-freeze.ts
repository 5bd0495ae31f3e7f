/**
 * Freezes a JSON-like value and everything reachable from it, so a stored value can be handed
 * to every reader without a copy and without anyone changing it behind the store's back.
 * Typed arrays are left alone (they cannot be frozen); the memory store copies those instead.
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value !== "object" || value === null || Object.isFrozen(value) || ArrayBuffer.isView(value)) {
    return value;
  }
  for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  return Object.freeze(value);
}
