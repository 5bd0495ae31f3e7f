/**
 * The result-schema thread (issue 24): a compile past its deadline or heap limit ends the thread,
 * not the server; the event loop keeps turning while it compiles; admission checks beyond the
 * queue limit are refused as busy.
 */
import { describe, expect, it } from "vitest";
import { ResultSchemaBusy, ResultSchemaThread } from "../../../src/drive/result-schema-thread.ts";
import { RESULT_SCHEMA_WORKER_URL } from "../../../src/drive/structured-result.ts";

/** A schema whose compile takes seconds: one `anyOf` of `n` constants (ajv's code generation is quadratic in it). */
function slowToCompile(n: number, salt = ""): unknown {
  return { anyOf: Array.from({ length: n }, (_, i) => ({ const: `${salt}${i}` })) };
}

describe("result-schema thread", () => {
  it("a compile past its deadline ends the thread and is answered with the limit; the next job runs on a fresh thread", async () => {
    const thread = new ResultSchemaThread(RESULT_SCHEMA_WORKER_URL, { jobTimeoutMs: 1_500 });
    try {
      expect(await thread.problem(slowToCompile(1_500))).toBe("compiling the result schema took longer than 1500 ms");
      expect(await thread.problem({ type: "object" })).toBeUndefined();
      expect(await thread.check('{"a":1}', { type: "object" })).toEqual({ ok: true, value: { a: 1 } });
    } finally {
      await thread.close();
    }
  });

  it("the event loop keeps turning while the thread compiles a schema that takes seconds", async () => {
    const thread = new ResultSchemaThread(RESULT_SCHEMA_WORKER_URL);
    try {
      await thread.problem({ type: "string" }); // the thread is up
      let ticks = 0;
      let worstGapMs = 0;
      let last = performance.now();
      const timer = setInterval(() => {
        const now = performance.now();
        worstGapMs = Math.max(worstGapMs, now - last);
        last = now;
        ticks++;
      }, 10);
      const started = performance.now();
      const problem = await thread.problem(slowToCompile(300, "loop"));
      const elapsed = performance.now() - started;
      clearInterval(timer);
      expect(problem).toBeUndefined();
      // Inline, the loop would not turn once during the compile (a second or more): here it kept
      // turning, at least every half second (coarse: the machine is shared).
      expect(ticks).toBeGreaterThanOrEqual(Math.floor(elapsed / 500));
      expect(ticks).toBeGreaterThan(0);
      expect(worstGapMs).toBeLessThan(1_000);
    } finally {
      await thread.close();
    }
  });

  it("admission checks beyond the queue limit are refused as busy (503), checks of admitted runs are not", async () => {
    const thread = new ResultSchemaThread(RESULT_SCHEMA_WORKER_URL, { maxQueued: 2 });
    try {
      const running = thread.problem(slowToCompile(300, "busy"));
      const queued = [thread.problem({ type: "string" }), thread.problem({ type: "number" })];
      await expect(thread.problem({ type: "boolean" })).rejects.toBeInstanceOf(ResultSchemaBusy);
      await expect(thread.problem({ type: "boolean" })).rejects.toMatchObject({ code: "schema_checker_busy" });
      const check = thread.check("true", { type: "boolean" });
      expect(await Promise.all([running, ...queued])).toEqual([undefined, undefined, undefined]);
      expect(await check).toEqual({ ok: true, value: true });
    } finally {
      await thread.close();
    }
  });

  it("a compile over the thread's heap limit ends the thread, not the process", async () => {
    const thread = new ResultSchemaThread(RESULT_SCHEMA_WORKER_URL, { maxHeapMb: 8, jobTimeoutMs: 20_000 });
    try {
      expect(await thread.problem(slowToCompile(2_000, "heap"))).toMatch(/ran out of memory \(8 MiB\)|thread (failed|exited)/);
      expect(await new ResultSchemaThread(RESULT_SCHEMA_WORKER_URL).problem({ type: "string" })).toBeUndefined();
    } finally {
      await thread.close();
    }
  });
});
