import { describe, expect, it } from "vitest";
import { consoleObserver, consoleTimingInterceptor } from "../../../src/index.ts";
import { createRuntime } from "../../../src/runtime/runtime.ts";
import { clockTool } from "../../../src/agent/clock-tool.ts";
import { scriptedModel } from "../../../src/agent/scripted-model.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";

describe("console logging from the library", () => {
  it("consoleObserver logs admission, claim, finished tool calls and settlement; consoleTimingInterceptor times each op", async () => {
    const lines: string[] = [];
    const write = (line: string) => lines.push(line);
    const scripted = scriptedModel([
      [{ toolCall: { id: "call-1", name: "clock", arguments: {} } }],
      [{ text: "It is now." }],
    ]);
    const runtime = createRuntime({
      store: createMemoryStore(),
      agents: { assistant: { initialize: () => ({ ...scripted, tools: [clockTool()] }) } },
      observers: [consoleObserver({ write })],
      interceptors: [consoleTimingInterceptor({ write, timestamps: false })],
    });
    await runtime.start();
    try {
      const { submissionId } = await runtime.dispatch({ agent: "assistant", instance: "w1", message: { kind: "user", body: "time?" } });
      expect((await runtime.wait(submissionId)).status).toBe("succeeded");
    } finally {
      await runtime.close();
    }
    const where = "assistant/w1/default sub=";
    const observed = lines.filter((l) => !l.startsWith("debug "));
    expect(observed.map((l) => l.replace(/^\S+ /, "").split(" ")[0])).toEqual(["admitted", "claimed", "tool", "settled"]);
    for (const line of observed) expect(line).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z /);
    expect(observed[1]).toContain(where);
    expect(observed[1]).toMatch(/\(#1\)$/);
    expect(observed[2]).toMatch(/tool finished assistant\/w1\/default sub=\S+ clock$/);
    expect(observed[3]).toMatch(/settled assistant\/w1\/default sub=\S+ succeeded \(\d+ tokens\)$/);
    const timed = lines.filter((l) => l.startsWith("debug "));
    expect(timed.map((l) => l.split(" ")[1])).toEqual(expect.arrayContaining(["attempt", "operation:prompt", "turn", "tool:clock"]));
    for (const line of timed) expect(line).toMatch(/ \d+\.\dms ok$/);
  });

  it("writes to console.log by default", () => {
    const original = console.log;
    const seen: unknown[] = [];
    console.log = (...args: unknown[]) => void seen.push(args.join(" "));
    try {
      consoleObserver({ timestamps: false })({
        type: "submission_admitted",
        correlation: { sessionKey: { agent: "a", instance: "i", session: "default" }, conversationId: "c", submissionId: "s" },
        input: { kind: "user", body: "hi" },
        replayed: true,
      });
    } finally {
      console.log = original;
    }
    expect(seen).toEqual(["admitted a/i/default sub=s (replayed, idempotent)"]);
  });
});
