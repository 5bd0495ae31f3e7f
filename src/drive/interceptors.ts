import type { Interceptor, OpInfo } from "../ports/observer.ts";

/**
 * Runs `inner` inside the interceptor onion (first registered = outermost). Resolves to false
 * when some interceptor returned without calling `next` (the operation is aborted; `inner` did
 * not run). An interceptor's throw, or `inner`'s, propagates.
 */
export async function runInterceptors(
  interceptors: readonly Interceptor[],
  info: OpInfo,
  inner: () => Promise<void>,
): Promise<boolean> {
  let ran = false;
  const at = (i: number): Promise<void> => {
    if (i === interceptors.length) {
      ran = true;
      return inner();
    }
    let entered = false;
    return interceptors[i]!(info, () => {
      if (entered) return Promise.reject(new Error("interceptor called next() twice"));
      entered = true;
      return at(i + 1);
    });
  };
  await at(0);
  return ran;
}
