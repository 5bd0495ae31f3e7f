import { describe, expect, it } from "vitest";
import { AgentNotLoaded, isHarnessError } from "../../../src/errors.ts";
import { namesOnlyAgents } from "../../../src/agent/names-only-agents.ts";
import type { Doorbell, WorkQueue } from "../../../src/ports/queue.ts";
import { createRuntime } from "../../../src/runtime/runtime.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { createApp } from "../../../src/http/app.ts";

/** A doorbell queue nobody consumes here (as SQS is for the http function). */
function recordingQueue(): WorkQueue & { rung: Doorbell[] } {
  const rung: Doorbell[] = [];
  return { rung, ring: async (doorbell) => void rung.push(doorbell) };
}

describe("namesOnlyAgents", () => {
  it("builds one definition per name whose initialize throws AgentNotLoaded", () => {
    const agents = namesOnlyAgents(["assistant", "planner"]);
    expect(Object.keys(agents)).toEqual(["assistant", "planner"]);
    const context = { agent: "assistant", instance: "w1", session: "default", env: () => "" };
    let thrown: unknown;
    try {
      agents.assistant!.initialize(context);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(AgentNotLoaded);
    expect(isHarnessError(thrown, "agent_not_loaded")).toBe(true);
    expect((thrown as Error).message).toMatch(/assistant.*by name only/);
  });

  it("lets a runtime admit work for known agents and refuse unknown ones, without running any", async () => {
    const queue = recordingQueue();
    const store = createMemoryStore();
    const runtime = createRuntime({ agents: namesOnlyAgents(["assistant"]), store, queue });
    try {
      expect(runtime.hasAgent("assistant")).toBe(true);
      expect(runtime.hasAgent("other")).toBe(false);
      const admitted = await runtime.dispatch({ agent: "assistant", instance: "w1", message: { kind: "user", body: "hi" } });
      expect(admitted.replayed).toBe(false);
      expect(queue.rung.map((d) => d.submissionId)).toEqual([admitted.submissionId]);
      await expect(
        runtime.dispatch({ agent: "other", instance: "w1", message: { kind: "user", body: "hi" } }),
      ).rejects.toMatchObject({ code: "unknown_agent" });
      expect((await store.getSubmission(admitted.submissionId)).status).toBe("queued");
      // The sweep needs no agent either.
      await expect(runtime.sweep()).resolves.toMatchObject({ reclaimed: 0 });
    } finally {
      await runtime.close();
    }
  });

  it("serves the HTTP app: 202 for a known agent, 404 unknown_agent otherwise", async () => {
    const runtime = createRuntime({ agents: namesOnlyAgents(["assistant"]), store: createMemoryStore(), queue: recordingQueue() });
    try {
      const app = createApp(runtime);
      const post = (agent: string) =>
        app.request(`/agents/${agent}/w1`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ kind: "user", body: "hi" }),
        });
      expect((await post("assistant")).status).toBe(202);
      const unknown = await post("nobody");
      expect(unknown.status).toBe(404);
      expect(await unknown.json()).toMatchObject({ code: "unknown_agent" });
    } finally {
      await runtime.close();
    }
  });
});
