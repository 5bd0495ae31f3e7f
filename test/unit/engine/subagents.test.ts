/**
 * Durable subagents in the embedded shape (issue 10): a parent's `task` calls admit durable
 * children, the parent parks `waiting` (no lease) and the last child's settlement requeues it
 * exactly once; the resumed run continues from the log with every outcome.
 */
import { describe, expect, it } from "vitest";
import type { ConversationRecord, RecordDraft } from "../../../src/protocol/records.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { childAddress } from "../../../src/conversation/task-names.ts";
import type { HarnessEvent } from "../../../src/ports/observer.ts";
import type { ScriptStep } from "../../../src/agent/scripted-model.ts";
import { taskToolDescription, taskToolSchema } from "../../../src/drive/task-tool.ts";
import { allRecords, scriptedAgent, startTestServer } from "../../support/runtime-kit.ts";
import { THREE_CHILDREN_PARENT_LOG } from "../../support/subagent-family.ts";

const user = (body: string) => ({ kind: "user" as const, body });
const lastUserText = (messages: { role: string; content: unknown }[]): string => {
  const m = [...messages].reverse().find((x) => x.role === "user");
  return typeof m?.content === "string" ? m.content : ((m?.content as { text?: string }[]) ?? []).map((c) => c.text ?? "").join("");
};
const toolResultsOf = (messages: { role: string; content: unknown; toolCallId?: string }[]) =>
  messages.filter((m) => m.role === "toolResult").map((m) => ({ id: m.toolCallId, text: (m.content as { text: string }[]).map((c) => c.text).join("") }));

/** A child that answers "<agent> on: <its prompt>". */
const answering = (name: string, n = 20): ScriptStep[] =>
  Array.from({ length: n }, () => (messages) => [{ text: `${name} on: ${lastUserText(messages as never)}` }]);

const spawnThree: ScriptStep = [
  { text: "delegating" },
  { toolCall: { id: "call-a", name: "task", arguments: { agent: "researcher", prompt: "alpha" } } },
  { toolCall: { id: "call-b", name: "task", arguments: { agent: "researcher", prompt: "beta" } } },
  { toolCall: { id: "call-c", name: "task", arguments: { agent: "researcher", prompt: "gamma" } } },
];

function parentAndChildren(leadSteps: ScriptStep[]) {
  const lead = scriptedAgent(leadSteps);
  const researcher = scriptedAgent(answering("researcher"));
  researcher.definition.description = "Looks things up";
  return { lead, researcher, agents: { lead: lead.definition, researcher: researcher.definition } };
}

const kindsOf = (records: ConversationRecord[]) => records.map((r) => r.kind).filter((k) => !k.startsWith("assistant_text") && k !== "assistant_message_started");

describe("durable subagents (embedded)", () => {
  it("a parent with three parallel children settles once with all three outcomes; the resume charges no attempt", async () => {
    const { lead, researcher, agents } = parentAndChildren([
      spawnThree,
      (messages) => [{ text: `summary: ${toolResultsOf(messages as never).map((r) => r.text).join(" | ")}` }],
    ]);
    const h = await startTestServer({ agents, config: { subagents: { lead: ["researcher"] } } });
    const { submissionId, conversationId } = await h.runtime.dispatch({ agent: "lead", instance: "p1", message: user("plan it") });
    const settled = await h.runtime.wait(submissionId);
    expect(settled.status).toBe("succeeded");

    const parent = await h.store.getSubmission(submissionId);
    expect(parent.attemptCount, "the resume claim charged nothing").toBe(1);
    const log = await allRecords(h.store, conversationId);
    expect(kindsOf(log)).toEqual(THREE_CHILDREN_PARENT_LOG);
    const outcomes = log.filter((r) => r.kind === "tool_outcome").map((r) => r.payload);
    expect(outcomes.map((o) => [o.callId, o.toolName, o.isError ?? false]).sort()).toEqual([
      ["call-a", "task", false],
      ["call-b", "task", false],
      ["call-c", "task", false],
    ]);
    expect(lead.scripted.calls).toHaveLength(2);
    const resumed = toolResultsOf(lead.scripted.calls[1]!.messages as never);
    expect(resumed.map((r) => r.id)).toEqual(["call-a", "call-b", "call-c"]);
    expect(resumed.map((r) => r.text)).toEqual(["researcher on: alpha", "researcher on: beta", "researcher on: gamma"]);
    expect(settled).toMatchObject({ status: "succeeded" });
    expect(log.filter((r) => r.kind === "submission_settled")).toHaveLength(1);

    // The children: durable submissions named after the parent's call, linked back to it.
    for (const callId of ["call-a", "call-b", "call-c"]) {
      const address = childAddress({ submissionId, instance: "p1" }, callId);
      const child = await h.store.getSubmission(address.submissionId);
      expect(child).toMatchObject({
        status: "settled",
        parentSubmissionId: submissionId,
        parentCallId: callId,
        depth: 1,
        sessionKey: { agent: "researcher", instance: address.instance, session: address.session },
      });
      const childLog = await allRecords(h.store, child.conversationId);
      expect(childLog[0]).toMatchObject({ kind: "conversation_created", payload: { parentRef: { conversationId, callId } } });
      const spawned = log.find((r) => r.kind === "task_spawned" && r.payload.callId === callId);
      expect(spawned?.payload).toEqual({
        callId,
        agent: "researcher",
        childInstance: address.instance,
        childConversationId: child.conversationId,
        childSubmissionId: child.id,
        prompt: { "call-a": "alpha", "call-b": "beta", "call-c": "gamma" }[callId],
      });
    }
    expect(researcher.scripted.calls).toHaveLength(3);

    const types = (t: HarnessEvent["type"]) => h.events.filter((e) => e.type === t && e.correlation.submissionId === submissionId);
    expect(types("submission_spawned")).toHaveLength(3);
    expect(types("submission_waiting")).toHaveLength(1);
    expect(types("submission_resumed"), "woken exactly once").toHaveLength(1);
    expect(types("submission_claimed")).toHaveLength(2);
    await h.runtime.close();
  });

  it("a resumed turn may spawn again: the parent waits twice, is woken twice, and still charges one attempt", async () => {
    const { lead, agents } = parentAndChildren([
      [{ toolCall: { id: "call-1", name: "task", arguments: { agent: "researcher", prompt: "first" } } }],
      [{ toolCall: { id: "call-2", name: "task", arguments: { agent: "researcher", prompt: "second" } } }],
      (messages) => [{ text: `both: ${toolResultsOf(messages as never).map((r) => r.text).join(" + ")}` }],
    ]);
    const h = await startTestServer({ agents, config: { subagents: { lead: ["researcher"] } } });
    const { submissionId, conversationId } = await h.runtime.dispatch({ agent: "lead", instance: "twice", message: user("go") });
    expect(await h.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect(toolResultsOf(lead.scripted.calls[2]!.messages as never).map((r) => r.text)).toEqual(["researcher on: first", "researcher on: second"]);
    const log = await allRecords(h.store, conversationId);
    expect(log.filter((r) => r.kind === "task_spawned").map((r) => r.payload.callId)).toEqual(["call-1", "call-2"]);
    const of = (t: HarnessEvent["type"]) => h.events.filter((e) => e.type === t && e.correlation.submissionId === submissionId);
    expect(of("submission_waiting")).toHaveLength(2);
    expect(of("submission_resumed")).toHaveLength(2);
    expect((await h.store.getSubmission(submissionId)).attemptCount).toBe(1);
    await h.runtime.close();
  });

  it("a provider that repeats a call id across turns: the later `task` call gets its own child and its own outcome", async () => {
    // Some OpenAI-compatible servers number calls per response (`call_0` every turn).
    const { lead, researcher, agents } = parentAndChildren([
      [{ toolCall: { id: "call_0", name: "task", arguments: { agent: "researcher", prompt: "first" } } }],
      [{ toolCall: { id: "call_0", name: "task", arguments: { agent: "researcher", prompt: "second" } } }],
      (messages) => [{ text: `both: ${toolResultsOf(messages as never).map((r) => r.text).join(" + ")}` }],
    ]);
    const h = await startTestServer({ agents, config: { subagents: { lead: ["researcher"] } } });
    const { submissionId, conversationId } = await h.runtime.dispatch({ agent: "lead", instance: "repeats", message: user("go") });
    expect(await h.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    const results = toolResultsOf(lead.scripted.calls[2]!.messages as never);
    expect(results).toEqual([
      { id: "call_0", text: "researcher on: first" },
      { id: "call_0_2", text: "researcher on: second" },
    ]);
    expect(researcher.scripted.calls, "two children ran").toHaveLength(2);
    const log = await allRecords(h.store, conversationId);
    const spawned = log.filter((r) => r.kind === "task_spawned").map((r) => r.payload);
    expect(spawned.map((p) => p.callId)).toEqual(["call_0", "call_0_2"]);
    expect(new Set(spawned.map((p) => p.childSubmissionId)).size).toBe(2);
    expect(new Set(spawned.map((p) => p.childInstance)).size).toBe(2);
    expect(log.filter((r) => r.kind === "assistant_tool_call").map((r) => r.payload.callId)).toEqual(["call_0", "call_0_2"]);
    expect(h.events.some((e) => e.type === "recovery" && e.decision === "call_id_renamed")).toBe(true);
    await h.runtime.close();
  });

  it("a long child's outcome reaches its parent from the child's checkpoint, not its whole log", async () => {
    const long = "notes ".repeat(8_000); // ~48 KB streamed: the settling attempt stores a checkpoint
    const lead = scriptedAgent([
      [{ toolCall: { id: "call-long", name: "task", arguments: { agent: "researcher", prompt: "dig deep" } } }],
      (messages) => [{ text: `got ${toolResultsOf(messages as never)[0]!.text.length} chars` }],
    ]);
    const researcher = scriptedAgent([[{ text: long }]]);
    const memory = createMemoryStore();
    let childConversation: string | undefined;
    let childSettled = false;
    const wholeReadsAfterSettled: string[] = [];
    const store = new Proxy(memory, {
      get(target, prop) {
        if (prop === "appendRecords") {
          return async (conversationId: string, drafts: RecordDraft[], ...rest: unknown[]) => {
            const out = await (target.appendRecords as (...a: unknown[]) => Promise<ConversationRecord[]>)(conversationId, drafts, ...rest);
            if (conversationId === childConversation && drafts.some((d) => d.kind === "submission_settled")) childSettled = true;
            return out;
          };
        }
        if (prop === "readRecords") {
          return async (conversationId: string, afterId?: string, limit?: number) => {
            if (childSettled && conversationId === childConversation && !afterId) wholeReadsAfterSettled.push(conversationId);
            return target.readRecords(conversationId, afterId, limit);
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const h = await startTestServer({
      store,
      agents: { lead: lead.definition, researcher: researcher.definition },
      config: { subagents: { lead: ["researcher"] } },
      observers: [
        (e: HarnessEvent) => {
          if (e.type === "submission_spawned") childConversation = e.childConversationId;
        },
      ],
    });
    const { submissionId } = await h.runtime.dispatch({ agent: "lead", instance: "long", message: user("go") });
    expect(await h.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect(toolResultsOf(lead.scripted.calls[1]!.messages as never)[0]!.text, "the child's whole final text").toBe(long);
    expect(childSettled).toBe(true);
    expect(await memory.readCheckpoint(childConversation!), "the child's settlement stored a checkpoint").toBeDefined();
    expect(wholeReadsAfterSettled, "the wake read the child's log from its checkpoint on").toEqual([]);
    await h.runtime.close();
  });

  it("the tool: its name, description and schema as the spec pins them; only the policy's parents get it", async () => {
    const targets = [{ name: "a", description: "first" }, { name: "b" }];
    expect(taskToolDescription(targets)).toBe("Spawn a durable child run. Targets: a — first; b");
    expect(taskToolSchema(targets)).toEqual({
      type: "object",
      properties: {
        agent: { type: "string", enum: ["a", "b"], description: "The agent to spawn as a durable child run" },
        prompt: { type: "string", description: "The self-contained task for the child" },
      },
      required: ["agent", "prompt"],
    });
  });
});
