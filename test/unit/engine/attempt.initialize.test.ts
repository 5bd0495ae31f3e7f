import { describe, expect, it } from "vitest";
import { initializeFailure } from "../../../src/engine/attempt.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { createRuntime } from "../../../src/runtime/runtime.ts";

/**
 * An agent whose `initialize` throws (issue 37, ADR 0052): the submission fails at once, on its
 * first attempt, and its error says which agent, what was thrown, and where (the stack's frames in
 * the agent's code), instead of the message alone.
 */
function missingKey(): never {
  throw new Error("ACME_API_KEY is not set");
}

describe("an agent whose initialize throws", () => {
  it("fails at once on attempt 1 with the agent, the error and the frames of the agent's code", async () => {
    let calls = 0;
    const runtime = createRuntime({
      store: createMemoryStore(),
      agents: {
        broken: {
          initialize: () => {
            calls++;
            return missingKey();
          },
        },
      },
      onObserverError: () => {},
    });
    await runtime.start();
    try {
      const admitted = await runtime.dispatch({ agent: "broken", instance: "i", message: { kind: "user", body: "hi" } });
      const settled = await runtime.wait(admitted.submissionId);
      expect(settled).toMatchObject({ status: "failed", errorCode: "run_failed" });
      const lines = (settled as { error: string }).error.split("\n");
      expect(lines[0]).toBe("agent broken: initialize threw: Error: ACME_API_KEY is not set");
      expect(lines[1]).toMatch(/^\s+at missingKey \(.*attempt\.initialize\.test\.ts:\d+:\d+\)$/);
      expect(lines.some((l) => /node:internal|node_modules|src\/engine\//.test(l))).toBe(false);
      expect(calls, "no retry").toBe(1);
      const page = await runtime.listSubmissions({ agent: "broken", instance: "i" });
      expect(page.submissions[0]).toMatchObject({ status: "settled", attemptCount: 1 });
    } finally {
      await runtime.close();
    }
  });

  it("a thrown non-Error is said as it is; a long stack keeps its first frames", () => {
    expect(initializeFailure("a", "nope")).toBe("agent a: initialize threw: nope");
    const err = new Error("deep");
    err.stack = ["Error: deep", ...Array.from({ length: 20 }, (_, i) => `    at f${i} (/app/agents.ts:${i + 1}:1)`)].join("\n");
    const text = initializeFailure("a", err).split("\n");
    expect(text).toHaveLength(9);
    expect(text[8]).toBe("    at f7 (/app/agents.ts:8:1)");
  });
});
