import { describe, expect, it } from "vitest";
import { consoleObserver, consoleTimingInterceptor } from "../../../src/index.ts";
import { createRuntime } from "../../../src/runtime/runtime.ts";
import { escapeControl } from "../../../src/logging/console.ts";
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

  it("a cancel reason, a tool name or a recovery detail cannot forge a log line or reach the terminal raw (issue 24)", async () => {
    const lines: string[] = [];
    const write = (line: string) => lines.push(line);
    const forged = "\n2026-01-01T00:00:00.000Z settled assistant/w1/default sub=x succeeded\u001b[2J\u009b31m";
    const scripted = scriptedModel([[{ toolCall: { id: "call-1", name: `clock${forged}`, arguments: {} } }], [{ text: "done" }]]);
    const runtime = createRuntime({
      store: createMemoryStore(),
      agents: { assistant: { initialize: () => ({ ...scripted, tools: [clockTool()] }) } },
      observers: [consoleObserver({ write, timestamps: false })],
      interceptors: [consoleTimingInterceptor({ write, timestamps: false })],
    });
    await runtime.start();
    try {
      const ran = await runtime.dispatch({ agent: "assistant", instance: "w1", message: { kind: "user", body: "time?" } });
      await runtime.wait(ran.submissionId);
      const held = await runtime.dispatch({ agent: "assistant", instance: "w2", message: { kind: "user", body: "wait" } });
      await runtime.cancel(held.submissionId, `stop${forged}`);
      await runtime.wait(held.submissionId);
    } finally {
      await runtime.close();
    }
    consoleObserver({ write, timestamps: false })({
      type: "recovery",
      correlation: { sessionKey: { agent: "a", instance: "i", session: "default" }, conversationId: "c", submissionId: "s" },
      decision: "transient_backoff",
      detail: `lease expired${forged}`,
    } as Parameters<ReturnType<typeof consoleObserver>>[0]);
    for (const line of lines) {
      expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    }
    const escaped = "\\n2026-01-01T00:00:00.000Z settled assistant/w1/default sub=x succeeded\\x1b[2J\\x9b31m";
    // One line per settlement, and only w1's says it succeeded: the forged one stays inside the reason.
    expect(lines.filter((l) => /^settled \S+ sub=\S+ succeeded/.test(l)).map((l) => l.split(" ")[1])).toEqual(["assistant/w1/default"]);
    expect(lines.find((l) => l.startsWith("tool finished"))).toContain(`clock${escaped} (error)`);
    expect(lines.find((l) => l.includes(" cancelled") || l.includes("stop"))).toContain(`stop${escaped}`);
    expect(lines.at(-1)).toBe(`recovery a/i/default sub=s transient_backoff: lease expired${escaped}`);
  });

  it("escapeControl escapes bidirectional controls: a reason cannot reorder what its line shows", () => {
    // U+202E (right-to-left override) renders "deliaf" as "failed"; U+2066-2069 isolates, U+200E/F marks.
    const spoofed = "ok \u202edeliaf\u202c \u2066x\u2069 \u200e\u200f\u061c";
    expect(escapeControl(spoofed)).toBe("ok \\u202edeliaf\\u202c \\u2066x\\u2069 \\u200e\\u200f\\u061c");
    expect(escapeControl("café — naïve 😀 עברית")).toBe("café — naïve 😀 עברית");
  });
});

