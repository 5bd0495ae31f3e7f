import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/ports/clock.ts";
import type { DoorbellOutcome, Doorbell } from "../../../src/ports/queue.ts";
import { InProcessQueue } from "../../../src/runtime/in-process-queue.ts";

const bell = (group: string, id: string): Doorbell => ({ group, submissionId: id });
const tick = () => new Promise((r) => setImmediate(r));

describe("InProcessQueue", () => {
  it("delivers event-driven, without any clock tick", async () => {
    const clock = new ManualClock();
    const queue = new InProcessQueue({ clock });
    const seen: string[] = [];
    queue.start(async (d) => {
      seen.push(d.submissionId);
      return { kind: "ack" };
    });
    await queue.ring(bell("g", "a"));
    await tick();
    expect(seen).toEqual(["a"]);
    await queue.close();
  });

  it("keeps one group FIFO and one at a time, while other groups run concurrently", async () => {
    const queue = new InProcessQueue();
    const log: string[] = [];
    const gates = new Map<string, () => void>();
    queue.start(async (d) => {
      log.push(`start ${d.submissionId}`);
      await new Promise<void>((r) => gates.set(d.submissionId, r));
      log.push(`end ${d.submissionId}`);
      return { kind: "ack" };
    });
    await queue.ring(bell("g1", "a1"));
    await queue.ring(bell("g1", "a2"));
    await queue.ring(bell("g2", "b1"));
    await tick();
    expect(log).toEqual(["start a1", "start b1"]);
    gates.get("a1")!();
    await tick();
    expect(log).toEqual(["start a1", "start b1", "end a1", "start a2"]);
    gates.get("a2")!();
    gates.get("b1")!();
    await tick();
    await queue.close();
  });

  it("redelivers a retry after the delay on the clock, and a throwing handler after a second", async () => {
    const clock = new ManualClock();
    const queue = new InProcessQueue({ clock });
    const seen: string[] = [];
    let calls = 0;
    queue.start(async (d): Promise<DoorbellOutcome> => {
      calls++;
      seen.push(`${d.submissionId}@${clock.now()}`);
      if (calls === 1) return { kind: "retry", delayMs: 500 };
      if (calls === 2) throw new Error("boom");
      return { kind: "ack" };
    });
    const t0 = clock.now();
    await queue.ring(bell("g", "x"));
    await tick();
    await clock.advance(499);
    expect(calls).toBe(1);
    await clock.advance(1);
    await tick();
    expect(calls).toBe(2);
    await clock.advance(1_000);
    await tick();
    expect(seen).toEqual([`x@${t0}`, `x@${t0 + 500}`, `x@${t0 + 1500}`]);
    await queue.close();
  });

  it("collapses a second ring for a submission already waiting in its group", async () => {
    const queue = new InProcessQueue();
    const seen: string[] = [];
    let release!: () => void;
    queue.start(async (d) => {
      seen.push(d.submissionId);
      if (d.submissionId === "first") await new Promise<void>((r) => (release = r));
      return { kind: "ack" };
    });
    await queue.ring(bell("g", "first"));
    await tick();
    await queue.ring(bell("g", "second"));
    await queue.ring(bell("g", "second"));
    release();
    await tick();
    await tick();
    expect(seen).toEqual(["first", "second"]);
    await queue.close();
  });

  it("respects the concurrency limit across groups", async () => {
    const queue = new InProcessQueue();
    let active = 0;
    let peak = 0;
    const releases: Array<() => void> = [];
    queue.start(
      async () => {
        active++;
        peak = Math.max(peak, active);
        await new Promise<void>((r) => releases.push(r));
        active--;
        return { kind: "ack" };
      },
      { concurrency: 2 },
    );
    for (let i = 0; i < 5; i++) await queue.ring(bell(`g${i}`, `s${i}`));
    await tick();
    expect(active).toBe(2);
    while (releases.length > 0) {
      releases.shift()!();
      await tick();
      await tick();
    }
    expect(peak).toBe(2);
    await queue.close();
  });
});
