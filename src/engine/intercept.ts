import type { Interceptor, OpInfo } from "../ports/observer.ts";

/**
 * Runs `body` inside the interceptor onion: the first registered interceptor is outermost.
 * An interceptor that returns without calling `next` leaves `body` unrun.
 */
export function runIntercepted(
  interceptors: readonly Interceptor[],
  info: OpInfo,
  body: () => Promise<void>,
): Promise<void> {
  const call = (i: number): Promise<void> => {
    const interceptor = interceptors[i];
    if (!interceptor) return body();
    return interceptor(info, () => call(i + 1));
  };
  return call(0);
}
