import { describe, expect, it } from "vitest";
import type { Interceptor, OpInfo } from "../../../src/ports/observer.ts";
import type { AgentTool } from "../../../src/agent/agent-setup.ts";
import { clockTool } from "../../../src/agent/clock-tool.ts";
import { scriptedModel, type ScriptStep } from "../../../src/agent/scripted-model.ts";
import { correctiveMessage } from "../../../src/drive/structured-result.ts";
import { Harness, KEY, summary, until } from "../../support/drive-kit.ts";

async function started(body = "go"): Promise<Harness> {
  const h = new Harness();
  await h.admit({ kind: "user", body });
  await h.claim();
  return h;
}

const noop = (name: string, execute: AgentTool["execute"]): AgentTool => ({
  name,
  label: name,
  description: name,
  parameters: { type: "object", properties: {} },
  execute,
});

describe("drive: steer and follow-up", () => {
  it("a steer accepted during a turn lands as user_message at that turn's end, and the provider sees it", async () => {
    const h = await started("research this");
    const research = noop("research", async () => {
      await h.store.enqueueInbox(KEY, { kind: "steer", body: "Focus on costs." });
      return { content: [{ type: "text", text: "found 3 papers" }], details: {} };
    });
    const s = scriptedModel([
      [{ toolCall: { id: "r1", name: "research", arguments: {} } }],
      [{ text: "Costs are low." }],
    ]);
    expect(await h.drive({ model: s.model, streamFn: s.streamFn, tools: [research] })).toMatchObject({ kind: "completed" });
    expect((await h.records()).map(summary)).toEqual([
      "user_message: research this",
      "assistant_message_started",
      "assistant_tool_call: r1 research",
      "assistant_message_completed: toolUse",
      'tool_outcome: r1 [{"type":"text","text":"found 3 papers"}]',
      "user_message(steer): Focus on costs.",
      "assistant_message_started",
      "assistant_text_delta: Cost", // a message's first fragment is written at once (ADR 0036)
      "assistant_text_delta: s are low.",
      "assistant_message_completed: stop",
    ]);
    const sent = s.calls[1]!.messages;
    expect(sent.map((m) => m.role)).toEqual(["system", "user", "assistant", "toolResult", "user"]);
    expect(sent.at(-1)).toMatchObject({ role: "user", content: "Focus on costs." });
  });

  it("a steer during a text-only turn runs one more turn", async () => {
    const h = await started();
    const s = scriptedModel([
      [{ text: "first" }, { emit: () => h.store.enqueueInbox(KEY, { kind: "steer", body: "shorter" }).then(() => {}) }],
      [{ text: "ok" }],
    ]);
    expect(await h.drive({ model: s.model, streamFn: s.streamFn })).toMatchObject({ kind: "completed" });
    // user_message, started, "firs" (a message's first fragment, at once: ADR 0036), "t", then:
    expect((await h.records()).map(summary).slice(4)).toEqual([
      "assistant_message_completed: stop",
      "user_message(steer): shorter",
      "assistant_message_started",
      "assistant_text_delta: ok",
      "assistant_message_completed: stop",
    ]);
    expect(s.calls).toHaveLength(2);
  });

  it("a follow-up is delivered after the run would stop, within the same submission", async () => {
    const h = await started("hello");
    const s = scriptedModel([
      [{ text: "hi" }, { emit: () => h.store.enqueueInbox(KEY, { kind: "followUp", body: "and one more thing" }).then(() => {}) }],
      (messages) => [{ text: `got: ${JSON.stringify(messages.at(-1))}`.slice(0, 40) }],
    ]);
    expect(await h.drive({ model: s.model, streamFn: s.streamFn })).toMatchObject({ kind: "completed" });
    const records = await h.records();
    expect(records.map(summary).slice(3, 6)).toEqual([
      "assistant_message_completed: stop",
      "user_message(followUp): and one more thing",
      "assistant_message_started",
    ]);
    expect(records.every((r) => r.submissionId === "sub-1")).toBe(true);
    expect(s.calls[1]!.messages.at(-1)).toMatchObject({ role: "user", content: "and one more thing" });
    // Each continue() is one operation.
    expect(h.events.filter((e) => e.type === "operation_started")).toHaveLength(2);
  });

  it("a follow-up that arrived after the run finished is delivered by the next drive (settlement refused)", async () => {
    const h = await started("hello");
    const s = scriptedModel([[{ text: "hi" }], [{ text: "sure" }]]);
    const setup = { model: s.model, streamFn: s.streamFn };
    expect(await h.drive(setup)).toMatchObject({ kind: "completed" });
    await h.store.enqueueInbox(KEY, { kind: "followUp", body: "also this" });
    expect(await h.drive(setup)).toMatchObject({ kind: "completed" });
    expect((await h.records()).map(summary).slice(-4)).toEqual([
      "user_message(followUp): also this",
      "assistant_message_started",
      "assistant_text_delta: sure",
      "assistant_message_completed: stop",
    ]);
  });
});

describe("drive: provider errors", () => {
  const cases: [string, string, object][] = [
    ["529 overloaded", "529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}", { kind: "transient" }],
    ["rate limit", "429 rate limit exceeded", { kind: "transient" }],
    ["auth (fatal)", "401 authentication_error: invalid x-api-key", { kind: "failed", errorCode: "run_failed", error: "401 authentication_error: invalid x-api-key" }],
  ];
  for (const [name, message, expected] of cases) {
    it(`classifies ${name}`, async () => {
      const h = await started();
      const s = scriptedModel([[{ text: "par" }, { error: message }]]);
      const outcome = await h.drive({ model: s.model, streamFn: s.streamFn });
      expect(outcome).toMatchObject(expected);
      if (outcome.kind === "transient") expect(outcome.error).toBe(message);
      const records = await h.records();
      expect(records.map(summary).slice(-1)).toEqual(["assistant_message_completed: error"]);
      const ended = h.events.find((e) => e.type === "operation_ended");
      expect(ended).toMatchObject({ error: "error" in outcome ? outcome.error : "" });
    });
  }

  it("an overflow with nothing to compact (one exchange) settles context_overflow and leaves the submission out of later projections", async () => {
    const h = await started();
    const s = scriptedModel([[{ text: "par" }, { error: "400 prompt is too long: 250000 tokens > 200000 maximum" }]]);
    expect(await h.drive({ model: s.model, streamFn: s.streamFn })).toMatchObject({
      kind: "failed",
      errorCode: "context_overflow",
      error: "context overflow with nothing left to compact: 400 prompt is too long: 250000 tokens > 200000 maximum",
      excludedFromContext: true,
    });
    expect(h.events.filter((e) => e.type === "recovery").map((e) => "decision" in e && e.decision)).toEqual(["overflow_compact_retry"]);
    expect((await h.records()).some((r) => r.kind === "compaction")).toBe(false);
  });

  it("a fresh attempt after a transient error re-runs the turn without the errored message", async () => {
    const h = await started("hi");
    const s = scriptedModel([[{ error: "503 service unavailable" }], [{ text: "hello" }]]);
    const setup = { model: s.model, streamFn: s.streamFn };
    expect(await h.drive(setup)).toMatchObject({ kind: "transient" });
    await h.release({ lastError: "503" });
    await h.claim();
    expect(await h.drive(setup)).toMatchObject({ kind: "completed" });
    expect(s.calls[1]!.messages.map((m) => m.role)).toEqual(["user"]);
    expect((await h.records()).filter((r) => r.kind === "user_message")).toHaveLength(1);
  });

  it("a turn that exceeds its timeout (provider ignoring abort) ends transient", async () => {
    const h = await started();
    const seen = () => until(() => h.events.some((e) => e.type === "delta"));
    const s = scriptedModel([[{ text: "slow" }, { emit: () => seen().then(() => h.clock.advance(5_000)) }, { hang: "deaf" }]]);
    const outcome = await h.drive({ model: s.model, streamFn: s.streamFn, turnTimeoutMs: 5_000 });
    expect(outcome).toEqual({ kind: "transient", error: "model turn timed out after 5s" });
    expect((await h.records()).map(summary).slice(-2)).toEqual(["assistant_text_delta: slow", "assistant_message_completed: error"]);
  });
});

describe("drive: structured results", () => {
  const schema = { type: "object", properties: { n: { type: "number" } }, required: ["n"], additionalProperties: false };

  async function run(steps: ScriptStep[], resultRetries?: number) {
    const h = new Harness();
    await h.admit({ kind: "user", body: "count", resultSchema: schema, ...(resultRetries ? { resultRetries } : {}) });
    await h.claim();
    const s = scriptedModel(steps);
    const outcome = await h.drive({ model: s.model, streamFn: s.streamFn });
    return { h, s, outcome, records: await h.records() };
  }

  it("returns the conforming result", async () => {
    expect((await run([[{ text: ' {"n": 1} ' }]])).outcome).toMatchObject({ kind: "completed", result: { n: 1 } });
    expect((await run([[{ text: 'Here:\n```json\n{"n": 2}\n```' }]])).outcome).toMatchObject({ kind: "completed", result: { n: 2 } });
  });

  it("feeds the validation error back as a visible correction and takes the next reply", async () => {
    const { outcome, records, s } = await run([[{ text: "It is two." }], [{ text: '{"n": "two"}' }], [{ text: '{"n": 2}' }]]);
    expect(outcome).toMatchObject({ kind: "completed", result: { n: 2 } });
    const corrections = records.filter((r) => r.kind === "user_message" && r.payload.origin === "correction");
    expect(corrections.map((r) => r.kind === "user_message" && r.payload.body)).toEqual([
      correctiveMessage("the reply is not a JSON document", schema),
      correctiveMessage("result/n must be number", schema),
    ]);
    expect(corrections[0]!.kind === "user_message" && corrections[0]!.payload.body).toBe(
      "Your previous reply did not validate against the required JSON schema.\n" +
        "Validation error: the reply is not a JSON document\n" +
        `Required schema:\n${JSON.stringify(schema, null, 2)}\n` +
        "Reply with ONLY a JSON document that validates against the schema — no prose, no code fences.",
    );
    expect(s.calls[1]!.messages.at(-1)).toMatchObject({ role: "user", content: correctiveMessage("the reply is not a JSON document", schema) });
  });

  it("fails result_schema_invalid when the corrective turns are spent", async () => {
    const { outcome, records } = await run([[{ text: "prose" }], [{ text: "{bad json" }]], 1);
    expect(outcome).toMatchObject({
      kind: "failed",
      errorCode: "result_schema_invalid",
      error: expect.stringMatching(/^structured result did not validate against the requested schema: the reply is not valid JSON: /),
    });
    expect(records.filter((r) => r.kind === "user_message")).toHaveLength(2);
  });

  it("an invalid schema is reported as such", async () => {
    const h = new Harness();
    await h.admit({ kind: "user", body: "x", resultSchema: { type: "nope" }, resultRetries: 1 });
    await h.claim();
    const s = scriptedModel([[{ text: "{}" }], [{ text: "{}" }]]);
    const outcome = await h.drive({ model: s.model, streamFn: s.streamFn });
    expect(outcome).toMatchObject({ kind: "failed", errorCode: "result_schema_invalid", error: expect.stringContaining("the result schema itself is invalid: ") });
  });
});

describe("drive: fencing, shutdown and budgets", () => {
  it("an append after the lease moved to another attempt returns interrupted and writes nothing more", async () => {
    const h = await started();
    const steal = noop("steal", async () => {
      // The lease expired and the sweeper handed the row to another attempt.
      await h.clock.advance(31_000);
      await h.release();
      await h.claim();
      return { content: [{ type: "text", text: "done" }], details: {} };
    });
    const s = scriptedModel([[{ toolCall: { id: "s1", name: "steal", arguments: {} } }], [{ text: "never" }]]);
    const before = h.claimed!;
    const outcome = await h.drive({ model: s.model, streamFn: s.streamFn, tools: [steal] }, { log: h.writer(before) });
    expect(outcome).toEqual({ kind: "interrupted" });
    const records = await h.records();
    expect(records.map(summary).at(-1)).toBe("assistant_message_completed: toolUse");
    expect(records.every((r) => r.attemptId === "att-1")).toBe(true);
    expect(s.calls).toHaveLength(1);
  });

  it("abort (shutdown) stops a hanging model turn promptly", async () => {
    const h = await started();
    const ac = new AbortController();
    const seen = () => until(() => h.events.some((e) => e.type === "delta"));
    const s = scriptedModel([[{ text: "thinking..." }, { emit: () => seen().then(() => ac.abort()) }, { hang: "deaf" }]]);
    expect(await h.drive({ model: s.model, streamFn: s.streamFn }, { signal: ac.signal })).toEqual({ kind: "interrupted" });
    // Nothing after the aborted message's start but its first fragment (written at once, ADR 0036).
    const records = (await h.records()).map(summary);
    expect(records.slice(records.lastIndexOf("assistant_message_started") + 1)).toEqual(["assistant_text_delta: thin"]);
  });

  it("passing the durability deadline mid-run fails timeout_exceeded at the turn boundary, no aborted message", async () => {
    const h = await started();
    const deadline = h.claimed!.createdAt + 60_000;
    const slow = noop("slow", async () => {
      h.clock.set(deadline + 1);
      return { content: [{ type: "text", text: "late" }], details: {} };
    });
    const s = scriptedModel([[{ toolCall: { id: "x", name: "slow", arguments: {} } }], [{ text: "never" }]]);
    const outcome = await h.drive({ model: s.model, streamFn: s.streamFn, tools: [slow], submissionTimeoutMs: 60_000 }, { deadline });
    expect(outcome).toMatchObject({ kind: "failed", errorCode: "timeout_exceeded", error: "durability timeout exceeded mid-run (budget 1m0s)" });
    expect((await h.records()).map(summary).at(-1)).toBe('tool_outcome: x [{"type":"text","text":"late"}]');
    expect(s.calls).toHaveLength(1);
  });

  it("a tool that exceeds its timeout and ignores abort yields an error outcome and the run goes on", async () => {
    const h = await started();
    const hang = noop("hang", () => {
      queueMicrotask(() => void h.clock.advance(1_500));
      return new Promise(() => {});
    });
    const s = scriptedModel([[{ toolCall: { id: "h1", name: "hang", arguments: {} } }], [{ text: "it timed out" }]]);
    expect(await h.drive({ model: s.model, streamFn: s.streamFn, tools: [hang], toolTimeoutMs: 1_500 })).toMatchObject({ kind: "completed" });
    expect((await h.records()).map(summary).slice(4)).toEqual([
      'tool_outcome: h1 error [{"type":"text","text":"tool hang timed out after 1.5s"}]',
      "assistant_message_started",
      "assistant_text_delta: it t", // a message's first fragment is written at once (ADR 0036)
      "assistant_text_delta: imed out",
      "assistant_message_completed: stop",
    ]);
    expect(h.events.find((e) => e.type === "tool_call_ended")).toMatchObject({ isError: true });
  });
});

describe("drive: interceptors", () => {
  it("wrap operations, turns and tools in registration order (first = outermost)", async () => {
    const h = await started();
    const log: string[] = [];
    const named =
      (name: string): Interceptor =>
      async (info: OpInfo, next) => {
        log.push(`${name}>${info.kind}${info.toolName ? `:${info.toolName}` : ""}`);
        await next();
        log.push(`${name}<${info.kind}`);
      };
    const s = scriptedModel([[{ toolCall: { id: "c", name: "clock", arguments: {} } }], [{ text: "ok" }]]);
    const outcome = await h.drive(
      { model: s.model, streamFn: s.streamFn, tools: [clockTool(h.clock)] },
      { interceptors: [named("A"), named("B")] },
    );
    expect(outcome).toMatchObject({ kind: "completed" });
    expect(log).toEqual([
      "A>operation",
      "B>operation",
      "A>turn",
      "B>turn",
      "B<turn",
      "A<turn",
      "A>tool:clock",
      "B>tool:clock",
      "B<tool",
      "A<tool",
      "A>turn",
      "B>turn",
      "B<turn",
      "A<turn",
      "B<operation",
      "A<operation",
    ]);
  });

  const skipping = (kind: string): Interceptor => async (info, next) => {
    if (info.kind !== kind) await next();
  };

  it("an interceptor that does not call next fails the run (operation, turn, tool)", async () => {
    for (const [kind, error] of [
      ["operation", "prompt operation aborted by an interceptor"],
      ["turn", "model turn aborted by an interceptor"],
      ["tool", "tool call clock (c) aborted by an interceptor"],
    ] as const) {
      const h = await started();
      const s = scriptedModel([[{ toolCall: { id: "c", name: "clock", arguments: {} } }], [{ text: "ok" }]]);
      const outcome = await h.drive({ model: s.model, streamFn: s.streamFn, tools: [clockTool(h.clock)] }, { interceptors: [skipping(kind)] });
      expect(outcome).toMatchObject({ kind: "failed", errorCode: "run_failed", error });
      expect(s.calls.length).toBeLessThanOrEqual(1);
    }
  });

  it("a throwing interceptor fails the run with its error; a tool's own throw stays a tool error", async () => {
    const h = await started();
    const boom = noop("boom", async () => {
      throw new Error("disk full");
    });
    const passthrough: Interceptor = async (_info, next) => next();
    const s = scriptedModel([[{ toolCall: { id: "b", name: "boom", arguments: {} } }], [{ text: "sorry" }]]);
    expect(await h.drive({ model: s.model, streamFn: s.streamFn, tools: [boom] }, { interceptors: [passthrough] })).toMatchObject({
      kind: "completed",
    });
    expect((await h.records()).map(summary)[4]).toBe('tool_outcome: b error [{"type":"text","text":"disk full"}]');

    const h2 = await started();
    const thrower: Interceptor = async (info, next) => {
      if (info.kind === "turn") throw new Error("tracing backend down");
      await next();
    };
    const s2 = scriptedModel([[{ text: "x" }]]);
    expect(await h2.drive({ model: s2.model, streamFn: s2.streamFn }, { interceptors: [thrower] })).toMatchObject({
      kind: "failed",
      errorCode: "run_failed",
      error: "tracing backend down",
    });
  });
});

describe("drive: parallel tool calls", () => {
  it("records every outcome of a parallel batch (completion order), each append on the new head", async () => {
    const h = await started();
    const quick = (name: string, text: string): AgentTool =>
      noop(name, async () => ({ content: [{ type: "text", text }], details: {} }));
    const s = scriptedModel([
      [
        { toolCall: { id: "a", name: "alpha", arguments: {} } },
        { toolCall: { id: "b", name: "beta", arguments: {} } },
        { toolCall: { id: "c", name: "gamma", arguments: {} } },
      ],
      [{ text: "all done" }],
    ]);
    const tools = [quick("alpha", "A"), quick("beta", "B"), quick("gamma", "C")];
    expect(await h.drive({ model: s.model, streamFn: s.streamFn, tools })).toMatchObject({ kind: "completed" });
    const outcomes = (await h.records()).filter((r) => r.kind === "tool_outcome").map((r) => r.kind === "tool_outcome" && r.payload.callId);
    expect([...outcomes].sort()).toEqual(["a", "b", "c"]);
    expect(s.calls[1]!.messages.slice(-3).map((m) => m.role === "toolResult" && m.toolCallId)).toEqual(["a", "b", "c"]);
  });
});

describe("drive: hand-off after a steer", () => {
  it("yields once the steer is recorded (the next step is a model call) and the next drive answers it", async () => {
    const h = await started("write a poem");
    const s = scriptedModel([
      [{ text: "Roses..." }, { emit: () => h.store.enqueueInbox(KEY, { kind: "steer", body: "make it rhyme" }).then(() => {}) }],
      [{ text: "Roses are red." }],
    ]);
    const setup = { model: s.model, streamFn: s.streamFn };
    expect(await h.drive(setup, { shouldYield: () => true })).toEqual({ kind: "continuation" });
    expect((await h.records()).map(summary).at(-1)).toBe("user_message(steer): make it rhyme");
    expect(s.calls).toHaveLength(1);
    await h.release({ continuation: true });
    await h.claim();
    expect(await h.drive(setup)).toMatchObject({ kind: "completed" });
    expect(s.calls[1]!.messages.at(-1)).toMatchObject({ role: "user", content: "make it rhyme" });
    expect((await h.records()).filter((r) => r.kind === "user_message")).toHaveLength(2);
  });
});
