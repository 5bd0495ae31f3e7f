/**
 * Store errors inside a `task` call (issue 10): a transient store failure while the call looks up
 * or admits its child is a store failure of the parent's attempt like any other (retried), never
 * the parent's `run_failed` and never the call's error result; and a child admitted before the
 * error is tracked by the retried parent, never left running with nobody waiting on it. The store
 * is the memory store with one call failing the way a throttled DynamoDB request does.
 */
import { describe, expect, it } from "vitest";
import { childAddress } from "../../src/conversation/task-names.ts";
import type { ConversationRecord } from "../../src/protocol/records.ts";
import { ManualClock } from "../../src/ports/clock.ts";
import type { Store } from "../../src/store/store.ts";
import type { ScriptStep } from "../../src/agent/scripted-model.ts";
import { createMemoryStore } from "../../src/memory/index.ts";
import { allRecords, scriptedAgent, startTestServer } from "../support/runtime-kit.ts";
import { lastUserText as lastUser, textOf, toolResults } from "../support/model-messages.ts";

const results = (messages: unknown) => toolResults(messages).map(textOf);

/** Stateless: two parallel calls, then a summary of what came back. */
const leadStep: ScriptStep = (messages) =>
  results(messages).length > 0
    ? [{ text: `summary: ${results(messages).join(" | ")}` }]
    : [
        { toolCall: { id: "call-a", name: "task", arguments: { agent: "researcher", prompt: "alpha" } } },
        { toolCall: { id: "call-b", name: "task", arguments: { agent: "researcher", prompt: "beta" } } },
      ];

/** What a throttled DynamoDB request throws (the SDK's error, not one of the harness's). */
function throttled(): Error {
  return Object.assign(new Error("Rate of requests exceeds the allowed throughput."), { name: "ThrottlingException", $retryable: { throttling: true } });
}

/** The memory store, with `fail` consulted before each call (throw from it to fail that call). */
function failingStore(clock: ManualClock, fail: (method: string, args: unknown[]) => void): Store {
  const store = createMemoryStore({ clock });
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        fail(String(prop), args);
        return value.apply(target, args);
      };
    },
  });
}

const PARENT = "p-errors";
const child = (callId: string) => childAddress({ submissionId: PARENT, instance: "errs" }, callId);

async function runFamily(fail: (method: string, args: unknown[]) => void) {
  const clock = new ManualClock();
  const lead = scriptedAgent(Array.from({ length: 10 }, () => leadStep));
  const researcher = scriptedAgent(Array.from({ length: 10 }, () => (messages) => [{ text: `on ${lastUser(messages)}` }]));
  const h = await startTestServer({
    clock,
    store: failingStore(clock, fail),
    agents: { lead: lead.definition, researcher: researcher.definition },
    config: { subagents: { lead: ["researcher"] } },
  });
  await h.runtime.dispatch({ agent: "lead", instance: "errs", dispatchId: PARENT, message: { kind: "user", body: "go" } });
  const settled = h.runtime.wait(PARENT);
  for (let i = 0; i < 10; i++) await h.clock.advance(5_000); // past the transient backoff
  const payload = await settled;
  const parent = await h.store.getSubmission(PARENT);
  const log = await allRecords(h.store, parent.conversationId);
  await h.runtime.close();
  return { h, payload, parent, log };
}

/** The parent ended with both children: each call answered once, by its child, never as an error. */
function expectBothChildren(log: ConversationRecord[]) {
  const outcomes = log.filter((r) => r.kind === "tool_outcome").map((r) => r.payload);
  expect(outcomes.map((o) => [o.callId, o.isError ?? false, textOf(o as never)]).sort()).toEqual([
    ["call-a", false, "on alpha"],
    ["call-b", false, "on beta"],
  ]);
  expect(log.filter((r) => r.kind === "task_spawned").map((r) => r.payload.callId).sort()).toEqual(["call-a", "call-b"]);
  expect(JSON.stringify(log.findLast((r) => r.kind === "assistant_message_completed")!.payload)).toContain("summary: on alpha | on beta");
}

describe("store errors inside a task call", () => {
  it("a throttled child lookup (the replay short-circuit) retries the parent's attempt; it ends with both children", async () => {
    let failures = 0;
    const { h, payload, parent, log } = await runFamily((method, args) => {
      if (method === "getSubmission" && args[0] === child("call-b").submissionId && failures++ === 0) throw throttled();
    });
    expect(payload).toMatchObject({ status: "succeeded" });
    expect(failures).toBeGreaterThan(1);
    expectBothChildren(log);
    expect(parent.attemptCount, "one attempt lost to the store error").toBe(2);
    const backoffs = h.events.filter((e) => e.type === "recovery" && e.decision === "transient_backoff" && e.correlation.submissionId === PARENT);
    expect(backoffs.map((e) => (e as { detail: string }).detail)).toEqual([expect.stringContaining("Rate of requests exceeds the allowed throughput")]);
  });

  it("a throttled admission of the second child: the first child is tracked, the second admitted on the retry", async () => {
    let failures = 0;
    const { payload, parent, log } = await runFamily((method, args) => {
      if (method === "admitSubmission" && (args[0] as { id: string }).id === child("call-b").submissionId && failures++ === 0) throw throttled();
    });
    expect(payload).toMatchObject({ status: "succeeded" });
    expectBothChildren(log);
    expect(parent.attemptCount).toBe(2);
  });

  it("a throttled lookup at the start of the retried attempt is retried again, not run_failed", async () => {
    // The first attempt's store error leaves both calls unanswered; the second attempt looks both
    // children up before anything else, and that lookup fails too.
    let failures = 0;
    const { payload, parent, log } = await runFamily((method, args) => {
      if (method === "getSubmission" && args[0] === child("call-a").submissionId && failures++ < 2) throw throttled();
    });
    expect(payload).toMatchObject({ status: "succeeded" });
    expectBothChildren(log);
    expect(parent.attemptCount).toBe(3);
  });

  it("the child admitted, then its first record's append throttled: the child is not left untracked; its log starts with parentRef", async () => {
    let failures = 0;
    let childConversation: string | undefined;
    const { h, payload, log } = await runFamily((method, args) => {
      const records = args[1] as { kind: string; payload: { instance?: string } }[] | undefined;
      if (method === "appendRecords" && records?.[0]?.kind === "conversation_created" && records[0].payload.instance === child("call-a").instance && failures++ === 0) {
        childConversation = args[0] as string;
        throw throttled();
      }
    });
    expect(payload).toMatchObject({ status: "succeeded" });
    expectBothChildren(log);
    const childRow = await h.store.getSubmission(child("call-a").submissionId);
    expect(childRow.conversationId).toBe(childConversation);
    const childLog = await allRecords(h.store, childRow.conversationId);
    expect(childLog.filter((r) => r.kind === "conversation_created")).toHaveLength(1);
    expect(childLog[0]).toMatchObject({ kind: "conversation_created", payload: { parentRef: { conversationId: log[0]!.conversationId, callId: "call-a" } } });
  });
});
