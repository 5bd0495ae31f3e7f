import { systemClock, type Clock } from "../../src/ports/clock.ts";

/** The start (epoch ms) of the wall-clock window of length `everyMs` that holds `now`. */
export function windowStart(now: number, everyMs: number): number {
  return Math.floor(now / everyMs) * everyMs;
}

export interface TickerOptions {
  /** Window length in ms (the windows are aligned to the epoch: 30 s → :00 and :30). */
  everyMs: number;
  /** Called once per window with its start; a rejection is reported and the next window tries again. */
  fire: (start: number) => Promise<void>;
  onError: (err: unknown, start: number) => void;
  clock?: Clock;
}

/**
 * Fires the current window at once (a restart mid-window fires it again, and idempotency drops
 * the repeat), then each window as it opens. Returns the stop function.
 */
export function startTicker(options: TickerOptions): () => void {
  const clock = options.clock ?? systemClock;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const tick = async () => {
    const start = windowStart(clock.now(), options.everyMs);
    try {
      await options.fire(start);
    } catch (err) {
      options.onError(err, start);
    }
    if (stopped) return;
    // Aim a little past the next boundary so the clock reads the new window when the timer runs.
    const next = windowStart(clock.now(), options.everyMs) + options.everyMs;
    timer = setTimeout(() => void tick(), Math.max(0, next - clock.now()) + 5);
  };
  void tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
