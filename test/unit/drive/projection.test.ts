import { Agent, type AgentTool, type StreamFn } from "@earendil-works/pi-agent-core";
import {
  createAssistantMessageEventStream,
  type AssistantMessage,
  type Message,
  type Model,
  type StopReason,
  type ToolCall,
} from "@earendil-works/pi-ai";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { danglingToolCalls, danglingToolOutcome } from "../../../src/conversation/dangling.ts";
import { project, projectPath, renderSummary } from "../../../src/drive/projection.ts";
import { activeLeafPath, reduce } from "../../../src/conversation/reducer.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { zeroUsage } from "../../../src/agent/block-stream.ts";
import { idAt, rec } from "../conversation/fixtures.ts";

const T0 = "2026-01-01T00:00:00.000Z";

const model: Model<"scripted"> = {
  id: "s1",
  name: "s1",
  api: "scripted",
  provider: "scripted",
  baseUrl: "",
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 100_000,
  maxTokens: 4096,
};

function assistant(content: AssistantMessage["content"], stopReason?: StopReason): AssistantMessage {
  return {
    role: "assistant",
    content,
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: zeroUsage(),
    stopReason: stopReason ?? (content.some((b) => b.type === "toolCall") ? "toolUse" : "stop"),
    timestamp: 1_000,
  };
}
const toolCall = (id: string, thoughtSignature?: string): ToolCall => ({
  type: "toolCall",
  id,
  name: "get_weather",
  arguments: { city: "Oslo" },
  ...(thoughtSignature === undefined ? {} : { thoughtSignature }),
});
const completed = (id: string, message: AssistantMessage): ConversationRecord =>
  rec(id, "assistant_message_completed", { message: { role: "assistant", type: "message", body: message } });
const callRecord = (id: string, callId: string, thoughtSignature?: string): ConversationRecord =>
  rec(id, "assistant_tool_call", {
    callId,
    toolName: "get_weather",
    args: { city: "Oslo" },
    ...(thoughtSignature === undefined ? {} : { thoughtSignature }),
  });
const outcome = (id: string, callId: string, text = `result ${callId}`, time = T0): ConversationRecord =>
  rec(id, "tool_outcome", { callId, toolName: "get_weather", content: [{ type: "text", text }], data: { callId } }, time);
const user = (id: string, body: string, time = T0): ConversationRecord => rec(id, "user_message", { body }, time);

const weatherParams = {
  type: "object",
  properties: { city: { type: "string" } },
  required: ["city"],
} as const;
const weather: AgentTool<typeof weatherParams> = {
  name: "get_weather",
  label: "Weather",
  description: "Current weather for a city",
  parameters: weatherParams,
  async execute() {
    return { content: [{ type: "text", text: "3C" }], details: {} };
  },
};

const roles = (messages: readonly { role: string }[]): string => messages.map((m) => m.role).join(",");

describe("project", () => {
  it("leads with pi's system message holding the prompt and the tool declarations", () => {
    const messages = project([user("a", "hi")], { systemPrompt: "Be terse.", tools: [weather] });
    expect(messages[0]).toEqual({
      role: "system",
      content: "Be terse.",
      toolsAdded: [{ name: "get_weather", description: "Current weather for a city", parameters: weatherParams }],
      timestamp: 0,
    });
    expect(roles(messages)).toBe("system,user");
  });

  it("has no system message when there is neither a prompt nor a tool", () => {
    expect(roles(project([user("a", "hi")]))).toBe("user");
    expect(roles(project([user("a", "hi")], { systemPrompt: "", tools: [] }))).toBe("user");
    expect(project([])).toEqual([]);
  });

  it("renders a user message as its text, with the record time as timestamp", () => {
    expect(project([user("a", "hello", "2026-03-04T05:06:07.089Z")])).toEqual([
      { role: "user", content: "hello", timestamp: Date.parse("2026-03-04T05:06:07.089Z") },
    ]);
  });

  it("notes attachments without loading them", () => {
    const [message] = project([
      rec("a", "user_message", {
        body: "see attached",
        attachments: [{ digest: "sha256:abc123", mediaType: "image/png", size: 2048 }],
      }),
    ]);
    const content = (message as { content: { type: string; text: string }[] }).content;
    expect(content[0]).toEqual({ type: "text", text: "see attached" });
    expect(content[1]!.text).toContain("sha256:abc123");
    expect(content[1]!.text).toContain("image/png");
    expect(content[1]!.text).toContain("2048 bytes");
  });

  it("renders a signal as the JSON of {type, body, sender?, tag?}, never as plain user text", () => {
    const messages = project([
      rec("a", "signal", { type: "comment", body: "LGTM", sender: { login: "octocat" }, tag: "pr-1" }),
      rec("b", "signal", { type: "ping", body: "hello" }),
    ]);
    expect(roles(messages)).toBe("user");
    const [first, second] = (messages[0] as { content: { type: string; text: string }[] }).content;
    expect(JSON.parse(first!.text)).toEqual({ type: "comment", body: "LGTM", sender: { login: "octocat" }, tag: "pr-1" });
    expect(first!.text.startsWith('{"type":"comment","body":"LGTM"')).toBe(true);
    expect(second).toEqual({ type: "text", text: '{"type":"ping","body":"hello"}' });
  });

  it("folds adjacent user-side messages into one, in order: a failed turn's input, the next input, signals, attachments", () => {
    const log = [
      user("a", "first question", "2026-01-01T00:00:01.000Z"),
      completed("b", assistant([{ type: "text", text: "401 unauthorized" }], "error")),
      rec("c", "submission_settled", { status: "failed", errorCode: "run_failed", error: "401" }),
      rec("d", "signal", { type: "ci", body: "build broke" }),
      rec("e", "user_message", { body: "see attached", attachments: [{ digest: "sha256:abc", mediaType: "image/png", size: 3 }] }),
      user("f", "second question"),
    ];
    const messages = project(log, { systemPrompt: "Be terse." });
    expect(roles(messages)).toBe("system,user");
    expect(messages[1]).toEqual({
      role: "user",
      content: [
        { type: "text", text: "first question" },
        { type: "text", text: '{"type":"ci","body":"build broke"}' },
        { type: "text", text: "see attached" },
        { type: "text", text: expect.stringContaining("sha256:abc") },
        { type: "text", text: "second question" },
      ],
      timestamp: Date.parse("2026-01-01T00:00:01.000Z"),
    });
  });

  it("folds a run of adjacent user messages in work linear in the run (an import of 40,000 froze the server, issue 33)", () => {
    // The work is counted, not timed: every element any array iterator yields while projecting
    // (spreads and for…of over arrays). Copying the run's blocks at each merge made it quadratic.
    const run = (n: number) => [rec(idAt(0), "conversation_created", { agent: "a", instance: "i", session: "s" }), ...Array.from({ length: n }, (_, i) => user(idAt(i + 1), `m${i}`))];
    const steps = (records: ConversationRecord[]) => {
      const iterate = Array.prototype[Symbol.iterator];
      let yielded = 0;
      Array.prototype[Symbol.iterator] = function counted(this: unknown[]) {
        const inner = iterate.call(this);
        return Object.assign(Object.create(inner) as ArrayIterator<unknown>, {
          next: () => {
            const step = inner.next();
            if (step.done !== true) yielded++;
            return step;
          },
        });
      } as typeof iterate;
      try {
        const messages = project(records);
        expect(messages).toHaveLength(1);
        expect((messages[0]!.content as unknown[]).length).toBe(records.length - 1);
      } finally {
        Array.prototype[Symbol.iterator] = iterate;
      }
      return yielded;
    };
    const small = steps(run(2_000));
    const large = steps(run(8_000));
    expect(small).toBeGreaterThan(2_000);
    // Four times the messages, at most a little over four times the work (quadratic: sixteen).
    expect(large / small).toBeLessThan(4.5);
  });

  it("keeps user messages apart when an assistant turn or tool results stand between them", () => {
    const log = [
      user("a", "go"),
      completed("b", assistant([toolCall("c1")])),
      outcome("c", "c1"),
      user("d", "steer: shorter"),
      completed("e", assistant([{ type: "text", text: "ok" }])),
      user("f", "next"),
    ];
    expect(roles(project(log))).toBe("user,assistant,toolResult,user,assistant,user");
    expect(project(log).filter((m) => m.role === "user").map((m) => m.content)).toEqual(["go", "steer: shorter", "next"]);
  });

  it("pairs tool calls and outcomes in call order, restoring a missing thought signature", () => {
    const log = [
      user("a", "weather in Oslo and Bergen?"),
      rec("b", "assistant_message_started", { model: "s1", messageType: "message" }),
      rec("c", "assistant_text_delta", { text: "Checking" }),
      callRecord("d", "c1", "U0lHMQ=="),
      callRecord("e", "c2", "from-record"),
      completed("f", assistant([{ type: "text", text: "Checking" }, toolCall("c1"), toolCall("c2", "own")])),
      // Completion order differs from call order.
      outcome("g", "c2", "Bergen: 5C", "2026-01-01T00:00:02.000Z"),
      outcome("h", "c1", "Oslo: 3C", "2026-01-01T00:00:01.000Z"),
      rec("i", "submission_settled", { status: "succeeded" }),
    ];
    const { messages, unansweredCallIds, skippedOutcomeIds } = projectPath(activeLeafPath(reduce(log)));
    expect(roles(messages)).toBe("user,assistant,toolResult,toolResult");
    const calls = (messages[1] as AssistantMessage).content.filter((b) => b.type === "toolCall");
    expect(calls.map((c) => [c.id, c.thoughtSignature])).toEqual([
      ["c1", "U0lHMQ=="],
      ["c2", "own"],
    ]);
    expect(messages[2]).toEqual({
      role: "toolResult",
      toolCallId: "c1",
      toolName: "get_weather",
      content: [{ type: "text", text: "Oslo: 3C" }],
      details: { callId: "c1" },
      isError: false,
      timestamp: Date.parse("2026-01-01T00:00:01.000Z"),
    });
    expect((messages[3] as { toolCallId: string }).toolCallId).toBe("c2");
    expect(unansweredCallIds).toEqual([]);
    expect(skippedOutcomeIds).toEqual([]);
  });

  it("maps an outcome without content or data to an empty result and carries isError", () => {
    const log = [
      user("a", "go"),
      completed("b", assistant([toolCall("c1")])),
      rec("c", "tool_outcome", { callId: "c1", toolName: "get_weather", isError: true }),
    ];
    expect(project(log)[2]).toEqual({
      role: "toolResult",
      toolCallId: "c1",
      toolName: "get_weather",
      content: [],
      isError: true,
      timestamp: Date.parse(T0),
    });
  });

  it("drops error and aborted assistant messages, and the outcomes of their calls", () => {
    const log = [
      user("a", "go"),
      callRecord("b", "c1"),
      completed("c", assistant([toolCall("c1")], "error")),
      outcome("d", "c1"),
      completed("e", assistant([{ type: "text", text: "partial" }], "aborted")),
      user("f", "again"),
      completed("g", assistant([{ type: "text", text: "done" }])),
    ];
    const { messages, skippedOutcomeIds } = projectPath(activeLeafPath(reduce(log)));
    expect(roles(messages)).toBe("user,assistant");
    expect(skippedOutcomeIds).toEqual(["d"]);
  });

  it("never emits an orphan result: calls of an assistant message that never completed", () => {
    // Crash after the tool call was recorded, before the message completed; the reconciler
    // answered the call. The model simply redoes the turn.
    const log = [user("a", "go"), callRecord("b", "c1"), outcome("c", "c1"), user("d", "next")];
    const { messages, skippedOutcomeIds } = projectPath(activeLeafPath(reduce(log)));
    expect(roles(messages)).toBe("user");
    expect(skippedOutcomeIds).toEqual(["c"]);
  });

  it("uses the first outcome of a call and skips a duplicate", () => {
    const log = [
      user("a", "go"),
      completed("b", assistant([toolCall("c1")])),
      outcome("c", "c1", "first"),
      outcome("d", "c1", "second"),
    ];
    const { messages, skippedOutcomeIds } = projectPath(activeLeafPath(reduce(log)));
    expect(roles(messages)).toBe("user,assistant,toolResult");
    expect((messages[2] as { content: { text: string }[] }).content[0]!.text).toBe("first");
    expect(skippedOutcomeIds).toEqual(["d"]);
  });

  it("reports unanswered calls instead of inventing results; the dangling reconciler closes them", () => {
    const log = [user("a", "go"), callRecord("b", "c1"), callRecord("c", "c2"), completed("d", assistant([toolCall("c1"), toolCall("c2")])), outcome("e", "c2")];
    const path = activeLeafPath(reduce(log));
    const before = projectPath(path);
    expect(roles(before.messages)).toBe("user,assistant,toolResult");
    expect(before.unansweredCallIds).toEqual(["c1"]);

    const repaired = [...log, ...danglingToolCalls(path).map((c, i) => rec(`z${i}`, "tool_outcome", danglingToolOutcome(c)))];
    const after = projectPath(activeLeafPath(reduce(repaired)));
    expect(after.unansweredCallIds).toEqual([]);
    expect(after.messages.map((m) => (m.role === "toolResult" ? `${m.toolCallId}:${m.isError}` : m.role))).toEqual([
      "user",
      "assistant",
      "c1:true",
      "c2:false",
    ]);
  });

  it("renders a compaction summary inline, followed by the kept entries", () => {
    const log = [
      user("a", "old question"),
      completed("b", assistant([{ type: "text", text: "old answer" }])),
      user("c", "kept question"),
      completed("d", assistant([{ type: "text", text: "kept answer" }])),
      rec("s", "compaction", { summary: "The user asked an old question.", firstKeptEntryId: "c", startIdx: 0, endIdx: 1 }),
      user("e", "new question"),
    ];
    const messages = project(log, { systemPrompt: "Be terse." });
    expect(roles(messages)).toBe("system,user,assistant,user");
    const [summary, kept] = (messages[1] as { content: { text: string }[] }).content;
    expect(summary!.text).toBe(renderSummary("The user asked an old question."));
    expect(summary!.text).toContain("<summary>\nThe user asked an old question.\n</summary>");
    expect(kept!.text).toBe("kept question");
    expect(JSON.stringify(messages)).not.toContain("old answer");
  });

  it("leaves out the messages of a submission settled excludedFromContext, not its compactions", () => {
    const of = (r: ConversationRecord, submissionId: string) => ({ ...r, submissionId }) as ConversationRecord;
    const log = [
      of(user("a", "first"), "s1"),
      of(completed("b", assistant([{ type: "text", text: "one" }])), "s1"),
      of(rec("c", "submission_settled", { status: "succeeded" }), "s1"),
      of(user("d", "HUGE input"), "s2"),
      of(completed("e", assistant([], "error")), "s2"),
      of(rec("f", "submission_settled", { status: "failed", errorCode: "context_overflow", error: "x", excludedFromContext: true }), "s2"),
      of(user("g", "next"), "s3"),
    ];
    const messages = project(log);
    expect(roles(messages)).toBe("user,assistant,user");
    expect(JSON.stringify(messages)).not.toContain("HUGE");
    // Without the marker the failed input stays (folded with the next one).
    const unmarked = log.map((r) => (r.id === "f" ? of(rec("f", "submission_settled", { status: "failed", errorCode: "run_failed", error: "x" }), "s2") : r));
    expect(JSON.stringify(project(unmarked))).toContain("HUGE");
  });

  it("leaves out outcomes whose call a compaction cut off", () => {
    const log = [
      user("a", "go"),
      completed("b", assistant([toolCall("c1")])),
      outcome("c", "c1"),
      rec("s", "compaction", { summary: "called c1", firstKeptEntryId: "c", startIdx: 0, endIdx: 1 }),
    ];
    const { messages, skippedOutcomeIds } = projectPath(activeLeafPath(reduce(log)));
    expect(roles(messages)).toBe("user");
    expect(skippedOutcomeIds).toEqual(["c"]);
  });

  it("drops a malformed stored assistant message and maps lifecycle kinds to nothing", () => {
    const log = [
      rec("a", "conversation_created", { agent: "a", instance: "i", session: "s" }),
      user("b", "go"),
      rec("c", "assistant_message_started", { model: "m", messageType: "message" }),
      rec("d", "assistant_thinking_delta", { text: "hmm" }),
      rec("e", "assistant_message_completed", { message: { role: "assistant", type: "message" } }),
      rec("f", "assistant_message_completed", { message: { role: "assistant", type: "message", body: { role: "user" } } }),
      rec("g", "task_spawned", { callId: "c9", agent: "a", childInstance: "ci", childConversationId: "cc", childSubmissionId: "cs", prompt: "p" }),
      rec("h", "submission_settled", { status: "failed", errorCode: "run_failed", error: "boom" }),
    ];
    expect(roles(project(log))).toBe("user");
  });

  it("neither mutates the records nor shares objects with them", () => {
    const log = [
      user("a", "go"),
      callRecord("b", "c1", "sig"),
      completed("c", assistant([toolCall("c1")])),
      outcome("d", "c1"),
    ];
    const snapshot = structuredClone(log);
    const messages = project(log);
    expect(log).toEqual(snapshot);
    (messages[1] as AssistantMessage).content.length = 0;
    (messages[2] as { content: unknown[] }).content.length = 0;
    expect(log).toEqual(snapshot);
  });

  it("always pairs every tool result with a call of the assistant message right before it", () => {
    fc.assert(
      fc.property(turnLogArb, (log) => {
        const path = activeLeafPath(reduce(log));
        const { messages, unansweredCallIds } = projectPath(path);
        const seenResults = new Set<string>();
        const missing: string[] = [];
        let open: string[] | undefined; // call ids of the assistant message the current result run follows
        for (const m of messages) {
          if (m.role === "toolResult") {
            expect(open).toBeDefined();
            expect(open).toContain(m.toolCallId);
            expect(seenResults.has(m.toolCallId)).toBe(false);
            seenResults.add(m.toolCallId);
            continue;
          }
          if (open) missing.push(...open.filter((id) => !seenResults.has(id)));
          open = undefined;
          if (m.role === "assistant") {
            expect(["error", "aborted"]).not.toContain(m.stopReason);
            open = m.content.filter((b) => b.type === "toolCall").map((b) => b.id);
          }
        }
        if (open) missing.push(...open.filter((id) => !seenResults.has(id)));
        expect(unansweredCallIds).toEqual(missing);
        // Strict alternation: never two user messages in a row.
        expect(roles(messages)).not.toMatch(/(^|,)user,user(,|$)/);
        // Answering the dangling calls closes every gap.
        const repaired = [
          ...log,
          ...danglingToolCalls(path).map((c, i) => rec(`zz${i}`, "tool_outcome", danglingToolOutcome(c))),
        ];
        expect(projectPath(activeLeafPath(reduce(repaired))).unansweredCallIds).toEqual([]);
      }),
    );
  });
});

/** Realistic turn-shaped logs with faults: dropped messages, missing/duplicate outcomes, compactions. */
const turnLogArb: fc.Arbitrary<ConversationRecord[]> = fc
  .array(
    fc.record({
      input: fc.constantFrom("user", "signal", "none"),
      calls: fc.integer({ min: 0, max: 3 }),
      stop: fc.constantFrom<StopReason>("stop", "toolUse", "length", "error", "aborted"),
      completes: fc.boolean(),
      outcomes: fc.array(fc.constantFrom("answer", "skip", "twice"), { minLength: 3, maxLength: 3 }),
      reverse: fc.boolean(),
      compactAt: fc.option(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })),
    }),
    { maxLength: 12 },
  )
  .map((turns) => {
    const log: ConversationRecord[] = [];
    const push = (make: (id: string) => ConversationRecord) => log.push(make(idAt(log.length)));
    turns.forEach((turn, t) => {
      if (turn.input === "user") push((id) => user(id, `turn ${t}`));
      if (turn.input === "signal") push((id) => rec(id, "signal", { type: "note", body: `turn ${t}` }));
      const callIds = Array.from({ length: turn.calls }, (_, k) => `t${t}c${k}`);
      for (const c of callIds) push((id) => callRecord(id, c));
      if (turn.completes) {
        const blocks = callIds.map((c) => toolCall(c));
        push((id) => completed(id, assistant([{ type: "text", text: `reply ${t}` }, ...blocks], turn.stop)));
      }
      const order = turn.reverse ? [...callIds].reverse() : callIds;
      order.forEach((c, k) => {
        const mode = turn.outcomes[k % 3];
        if (mode === "skip") return;
        push((id) => outcome(id, c));
        if (mode === "twice") push((id) => outcome(id, c, "again"));
      });
      if (turn.compactAt !== null && log.length > 0) {
        const kept = log[Math.floor(turn.compactAt * log.length)]!.id;
        push((id) => rec(id, "compaction", { summary: `up to ${t}`, firstKeptEntryId: kept, startIdx: 0, endIdx: 0 }));
      }
    });
    return log;
  });

describe("a projected transcript drives a real pi Agent", () => {
  /** A one-reply-per-call stream that records every context it was sent. */
  function scriptedStream(replies: string[]): { streamFn: StreamFn; seen: Message[][] } {
    const seen: Message[][] = [];
    const streamFn: StreamFn = (m, context) => {
      seen.push(structuredClone(context.messages));
      const out = createAssistantMessageEventStream();
      const message: AssistantMessage = {
        ...assistant([{ type: "text", text: replies.shift() ?? "no more replies" }]),
        api: m.api,
        provider: m.provider,
        model: m.id,
      };
      queueMicrotask(() => {
        out.push({ type: "start", partial: message });
        out.push({ type: "done", reason: "stop", message });
        out.end(message);
      });
      return out;
    };
    return { streamFn, seen };
  }

  it("continues from a recovered tool-result tail with the system prompt, tools and signatures intact", async () => {
    const log = [
      rec("a", "conversation_created", { agent: "weather", instance: "i", session: "s" }),
      user("b", "Weather in Oslo?"),
      callRecord("c", "c1", "U0lHMQ=="),
      completed("d", assistant([{ type: "text", text: "Checking." }, toolCall("c1")])),
      outcome("e", "c1", "Oslo: 3C"),
      // An aborted retry the driver recorded for observability only.
      completed("f", assistant([], "aborted")),
    ];
    const messages = project(log, { systemPrompt: "Be terse.", tools: [weather] });
    const { streamFn, seen } = scriptedStream(["3C in Oslo."]);
    const agent = new Agent({ initialState: { messages, model, tools: [weather] }, streamFn });
    expect(agent.state.systemPrompt).toBe("Be terse.");

    await agent.continue();

    expect(agent.state.errorMessage).toBeUndefined();
    expect(seen).toHaveLength(1);
    const sent = seen[0]!;
    // Exactly one system message, first: the tool set matches, so pi adds no tool-change message.
    expect(roles(sent)).toBe("system,user,assistant,toolResult");
    expect(sent[0]).toMatchObject({ role: "system", content: "Be terse.", toolsAdded: [{ name: "get_weather" }] });
    const call = (sent[2] as AssistantMessage).content.find((b) => b.type === "toolCall");
    expect(call).toMatchObject({ id: "c1", thoughtSignature: "U0lHMQ==" });
    expect(sent[3]).toMatchObject({ role: "toolResult", toolCallId: "c1" });
    expect(roles(agent.state.messages)).toBe("system,user,assistant,toolResult,assistant");
  });

  it("prompts on top of a compacted transcript with signals", async () => {
    const log = [
      user("a", "old"),
      completed("b", assistant([{ type: "text", text: "old answer" }])),
      rec("c", "signal", { type: "comment", body: "ship it", sender: { login: "octocat" } }),
      completed("d", assistant([{ type: "text", text: "noted" }])),
      rec("s", "compaction", { summary: "An old exchange.", firstKeptEntryId: "c", startIdx: 0, endIdx: 1 }),
    ];
    const messages = project(log, { systemPrompt: "You review pull requests." });
    const { streamFn, seen } = scriptedStream(["ok"]);
    const agent = new Agent({ initialState: { messages, model }, streamFn });

    await agent.prompt("What now?");

    const sent = seen[0]!;
    expect(roles(sent)).toBe("system,user,assistant,user");
    expect(sent[0]).toMatchObject({ role: "system", content: "You review pull requests." });
    // The summary and the kept signal after it are one user turn.
    const [summary, signal] = (sent[1] as { content: { text: string }[] }).content;
    expect(summary!.text).toContain("<summary>\nAn old exchange.\n</summary>");
    expect(JSON.parse(signal!.text)).toEqual({
      type: "comment",
      body: "ship it",
      sender: { login: "octocat" },
    });
    expect(sent[3]).toMatchObject({ role: "user", content: [{ type: "text", text: "What now?" }] });
  });
});
