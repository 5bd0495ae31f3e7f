/**
 * Subagent limits and the sweep's part (issue 10, embedded): the child limit (an error result,
 * never a suspension), the depth limit (children get no `task` tool at depth 1), the policy's
 * checks, wait expiry (`maxChildWaitMs`, and the parent's own budget) and the backstop that re-runs a
 * lost wake at the wait's checks, which back off.
 */
import { describe, expect, it } from "vitest";
import type { ConversationRecord } from "../../src/protocol/records.ts";
import { childAddress } from "../../src/conversation/task-names.ts";
import { resolveSubagents, taskTargetsOf } from "../../src/engine/subagents.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import type { ScriptStep } from "../../src/agent/scripted-model.ts";
import { ManualClock } from "../../src/ports/clock.ts";
import type { WaitCheckPostponement } from "../../src/store/submission.ts";
import { createMemoryStore } from "../../src/memory/index.ts";
import { allRecords, hangForever, scriptedAgent, settleTicks, startTestServer } from "../support/runtime-kit.ts";
import { lastUserText as lastUser, textOf, toolResults } from "../support/model-messages.ts";

const user = (body: string) => ({ kind: "user" as const, body });
const results = (messages: unknown) => toolResults(messages).map((m) => ({ id: m.toolCallId, text: textOf(m) }));
const task = (id: string, prompt: string, agent = "researcher") => ({ toolCall: { id, name: "task", arguments: { agent, prompt } } });
const answering = (n = 20): ScriptStep[] => Array.from({ length: n }, () => (messages) => [{ text: `researcher on: ${lastUser(messages)}` }]);
/** A child whose one turn outlasts the test's clock (no turn timeout or budget ends it first). */
const LONG_RUN = { turnTimeoutMs: 24 * 3_600_000, submissionTimeoutMs: 24 * 3_600_000 };
const outcomesOf = (log: ConversationRecord[]) => log.filter((r) => r.kind === "tool_outcome").map((r) => r.payload);

describe("subagent limits (embedded)", () => {
  it("past maxChildrenPerRun a task call is an error result (the spec's text), not a suspension; the run waits for the others", async () => {
    const lead = scriptedAgent([[task("call-a", "alpha"), task("call-b", "beta"), task("call-c", "gamma")], (m) => [{ text: `done: ${results(m).length}` }]]);
    const researcher = scriptedAgent(answering());
    const h = await startTestServer({
      agents: { lead: lead.definition, researcher: researcher.definition },
      config: { subagents: { lead: ["researcher"] }, subagentLimits: { maxChildrenPerRun: 2 } },
    });
    const { submissionId, conversationId } = await h.runtime.dispatch({ agent: "lead", instance: "lim", message: user("go") });
    expect(await h.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    const seen = results(lead.scripted.calls[1]!.messages);
    expect(seen).toEqual([
      { id: "call-a", text: "researcher on: alpha" },
      { id: "call-b", text: "researcher on: beta" },
      { id: "call-c", text: "task: child limit reached (2 live, max 2); wait for a running child to settle or serialize the work" },
    ]);
    const log = await allRecords(h.store, conversationId);
    expect(log.filter((r) => r.kind === "task_spawned").map((r) => r.payload.callId)).toEqual(["call-a", "call-b"]);
    expect(outcomesOf(log).find((o) => o.callId === "call-c")).toMatchObject({ toolName: "task", isError: true });
    await expect(h.store.getSubmission(childAddress({ submissionId, instance: "lim" }, "call-c").submissionId)).rejects.toMatchObject({ code: "submission_not_found" });
    expect(researcher.scripted.calls).toHaveLength(2);
    await h.runtime.close();
  });

  it("a parent whose ids leave its child no room (a 250-character dispatch id, a 245-character instance): the call is refused naming the problem, nothing admitted", async () => {
    for (const [dispatchId, instance, expected] of [
      [
        "d".repeat(250),
        "short",
        "task: cannot spawn: the child's submission id would be 266 characters, over the 256 an id may have (the parent's submission id is 250); spawning needs the parent's submission id to be at most 240 characters",
      ],
      [
        "long-instance",
        "i".repeat(245),
        "task: cannot spawn: the child's instance id would be 261 characters, over the 256 an id may have (the parent's instance id is 245); spawning needs the parent's instance id to be at most 240 characters",
      ],
    ] as const) {
      const lead = scriptedAgent([[task("call-a", "alpha")], (m) => [{ text: `lead got: ${results(m)[0]!.text}` }]]);
      const researcher = scriptedAgent(answering());
      const h = await startTestServer({ agents: { lead: lead.definition, researcher: researcher.definition }, config: { subagents: { lead: ["researcher"] } } });
      const { submissionId, conversationId } = await h.runtime.dispatch({ agent: "lead", instance, dispatchId, message: user("go") });
      expect(await h.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
      expect(results(lead.scripted.calls[1]!.messages)).toEqual([{ id: "call-a", text: expected }]);
      const log = await allRecords(h.store, conversationId);
      expect(log.filter((r) => r.kind === "task_spawned")).toEqual([]);
      expect(outcomesOf(log)).toMatchObject([{ callId: "call-a", toolName: "task", isError: true }]);
      expect(await h.store.listChildSubmissions(submissionId)).toEqual([]);
      expect(researcher.scripted.calls).toHaveLength(0);
      await h.runtime.close();
    }
  });

  it("children get no task tool at depth 1 (maxDepth 1): a child's task call is 'Tool task not found'; a root of the same agent has it", async () => {
    const lead = scriptedAgent([[task("call-a", "dig")], (m) => [{ text: `lead got: ${results(m)[0]!.text}` }]]);
    // The researcher always tries to delegate first, then reports what it got back.
    const researcher = scriptedAgent(
      Array.from({ length: 10 }, (): ScriptStep => (messages) => {
        const got = results(messages);
        return got.length === 0 ? [task("nested", "deeper")] : [{ text: `researcher got: ${got.at(-1)!.text}` }];
      }),
    );
    const h = await startTestServer({
      agents: { lead: lead.definition, researcher: researcher.definition },
      config: { subagents: { lead: ["researcher"], researcher: ["researcher"] } },
    });
    const parent = await h.runtime.dispatch({ agent: "lead", instance: "deep", message: user("go") });
    expect(await h.runtime.wait(parent.submissionId)).toMatchObject({ status: "succeeded" });
    const child = await h.store.getSubmission(childAddress({ submissionId: parent.submissionId, instance: "deep" }, "call-a").submissionId);
    expect(child.depth).toBe(1);
    const childLog = await allRecords(h.store, child.conversationId);
    expect(outcomesOf(childLog)).toMatchObject([{ callId: "nested", toolName: "task", content: [{ type: "text", text: "Tool task not found" }], isError: true }]);
    expect(childLog.some((r) => r.kind === "task_spawned")).toBe(false);
    expect(lead.scripted.calls[1]!.messages.length).toBeGreaterThan(0);
    expect(results(lead.scripted.calls[1]!.messages)[0]!.text).toBe("researcher got: Tool task not found");

    // The same agent dispatched as a root (depth 0) has the tool and spawns.
    expect(taskTargetsOf(resolveSubagents({ researcher: ["researcher"] }, {}, { researcher: researcher.definition }), "researcher", 0)).toEqual([{ name: "researcher" }]);
    expect(taskTargetsOf(resolveSubagents({ researcher: ["researcher"] }, { maxDepth: 2 }, { researcher: researcher.definition }), "researcher", 1)).toEqual([{ name: "researcher" }]);
    await h.runtime.close();
  });

  it("a call naming no target, or with bad arguments, is an error result in the spec's words; nothing is admitted", async () => {
    const lead = scriptedAgent([
      [task("call-x", "p", "nobody"), { toolCall: { id: "call-y", name: "task", arguments: { agent: "researcher" } } }],
      (m) => [{ text: results(m).map((r) => r.text).join(" / ") }],
    ]);
    const h = await startTestServer({
      agents: { lead: lead.definition, researcher: scriptedAgent(answering()).definition },
      config: { subagents: { lead: ["researcher"] } },
    });
    const { submissionId } = await h.runtime.dispatch({ agent: "lead", instance: "bad", message: user("go") });
    expect(await h.runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect(results(lead.scripted.calls[1]!.messages).map((r) => r.text)).toEqual([
      'task: "nobody" is not a spawnable agent; allowed targets: researcher',
      "task: invalid arguments: prompt must be a string",
    ]);
    expect(h.events.filter((e) => e.type === "submission_spawned")).toHaveLength(0);
    await h.runtime.close();
  });

  it("the policy is checked by createRuntime: unknown parents and targets, bad limits", () => {
    const store = createMemoryStore();
    const agents = { lead: scriptedAgent([]).definition };
    expect(() => createRuntime({ agents, store, subagents: { nobody: ["lead"] } })).toThrow('createRuntime: subagents: unknown parent agent "nobody"');
    expect(() => createRuntime({ agents, store, subagents: { lead: ["ghost"] } })).toThrow('createRuntime: subagents.lead: unknown target agent "ghost"');
    expect(() => createRuntime({ agents, store, subagentLimits: { maxChildrenPerRun: 1.5 } })).toThrow("subagentLimits.maxChildrenPerRun must be a whole number >= 0");
    expect(() => createRuntime({ agents, store, subagentLimits: { onParentTerminal: "explode" as never } })).toThrow("onParentTerminal");
    expect(resolveSubagents(undefined, undefined, agents).limits).toEqual({ maxChildrenPerRun: 8, maxDepth: 1, maxChildWaitMs: 0, onParentTerminal: "cancel_children" });
  });

  it("maxChildWaitMs: a wait that runs past it answers each pending call 'task wait expired', cancels the children, and the parent goes on", async () => {
    const lead = scriptedAgent([[task("call-slow", "forever")], (m) => [{ text: `gave up: ${results(m)[0]!.text}` }]]);
    const slow = scriptedAgent([[{ text: "thinking hard " }, { hang: "honest" }]]);
    const h = await startTestServer({
      agents: { lead: lead.definition, researcher: slow.definition },
      config: { subagents: { lead: ["researcher"] }, subagentLimits: { maxChildWaitMs: 60_000 } },
    });
    const parent = await h.runtime.dispatch({ agent: "lead", instance: "exp", message: user("go") });
    const childId = childAddress({ submissionId: parent.submissionId, instance: "exp" }, "call-slow").submissionId;
    for (let i = 0; i < 50 && (await h.store.getSubmission(parent.submissionId)).status !== "waiting"; i++) await settleTicks();
    const waiting = await h.store.getSubmission(parent.submissionId);
    expect(waiting).toMatchObject({ status: "waiting", pendingCalls: ["call-slow"], waitUntil: h.clock.now() + 60_000 });
    expect(waiting.leaseExpiresAt, "no lease while waiting").toBeUndefined();
    await h.clock.advance(61_000);
    await settleTicks();
    await h.clock.advance(5_000); // the sweep's next tick
    expect(await h.runtime.wait(parent.submissionId)).toMatchObject({ status: "succeeded" });
    expect(await h.runtime.wait(childId)).toMatchObject({ status: "failed", errorCode: "cancelled_by_parent", error: "cancelled: parent wait expired" });
    expect(results(lead.scripted.calls[1]!.messages)).toEqual([{ id: "call-slow", text: "task wait expired" }]);
    const log = await allRecords(h.store, parent.conversationId);
    expect(outcomesOf(log)).toEqual([{ callId: "call-slow", toolName: "task", content: [{ type: "text", text: "task wait expired" }], isError: true }]);
    await h.runtime.close();
  });

  it("backstop: a parent that died right after parking, whose child had settled while it still ran, is woken by the sweep", async () => {
    const lead = scriptedAgent([[task("call-a", "quick")], (m) => [{ text: `got: ${results(m)[0]!.text}` }]]);
    const researcher = scriptedAgent(answering());
    const agents = { lead: lead.definition, researcher: researcher.definition };
    let parentId = "";
    let died!: () => void;
    const dead = new Promise<void>((r) => (died = r));
    const h = await startTestServer({
      agents,
      config: { subagents: { lead: ["researcher"] } },
      faults: async (phase, id) => {
        if (id !== parentId) return;
        // Hold the parent's tool batch until its child has settled (its wakes find the parent running).
        if (phase === "tool_ran") await h.runtime.wait(childAddress({ submissionId: parentId, instance: "bs" }, "call-a").submissionId);
        if (phase === "parked") {
          died();
          return hangForever();
        }
      },
    });
    parentId = "bs-parent";
    await h.runtime.dispatch({ agent: "lead", instance: "bs", dispatchId: parentId, message: user("go") });
    await dead;
    await h.runtime.close({ abandon: true });
    const parked = await h.store.getSubmission(parentId);
    expect(parked, "its first wait check: one settlement grace (the lease) after the park").toMatchObject({
      status: "waiting",
      pendingCalls: ["call-a"],
      waitCheckAt: parked.updatedAt + 30_000,
    });
    const resumedBefore = h.events.filter((e) => e.type === "submission_resumed").length;

    const runtime = await h.restart({ agents });
    await settleTicks();
    expect((await h.store.getSubmission(parentId)).status, "its check is not due: the start-up sweep does not read it").toBe("waiting");
    await h.clock.advance(30_000); // the check comes due; the sweep's next tick runs the backstop
    expect(await runtime.wait(parentId)).toMatchObject({ status: "succeeded" });
    expect(h.events.filter((e) => e.type === "submission_resumed").length - resumedBefore).toBe(1);
    expect(results(lead.scripted.calls[1]!.messages)).toEqual([{ id: "call-a", text: "researcher on: quick" }]);
    await runtime.close();
  });

  it("wait checks back off: a parent waiting 55 minutes with nothing lost is checked 6 times, not at each of the 55 sweeps", async () => {
    const lead = scriptedAgent([[task("call-slow", "forever")], () => [{ text: "never reached" }]]);
    const slow = scriptedAgent([[{ text: "thinking hard " }, { hang: "honest" }]], LONG_RUN);
    const clock = new ManualClock();
    const store = createMemoryStore({ clock });
    const checks: number[] = [];
    const postpone = store.postponeWaitCheck.bind(store);
    store.postponeWaitCheck = async (p: WaitCheckPostponement) => {
      checks.push(clock.now());
      return postpone(p);
    };
    const h = await startTestServer({
      agents: { lead: lead.definition, researcher: slow.definition },
      clock,
      store,
      config: { subagents: { lead: ["researcher"] }, sweepIntervalMs: 60_000 },
    });
    const parent = await h.runtime.dispatch({ agent: "lead", instance: "idle", message: user("go") });
    for (let i = 0; i < 50 && (await store.getSubmission(parent.submissionId)).status !== "waiting"; i++) await settleTicks();
    const parkedAt = (await store.getSubmission(parent.submissionId)).updatedAt;
    for (let minute = 0; minute < 55; minute++) {
      await clock.advance(60_000);
      await settleTicks();
    }
    const waiting = await store.getSubmission(parent.submissionId);
    expect(waiting.status).toBe("waiting");
    const ages = checks.map((t) => Math.round((t - parkedAt) / 60_000));
    expect(ages, "minutes after the park: each check doubles the wait's age").toEqual([1, 2, 4, 8, 16, 32]);
    const doubled = parkedAt + 2 * (checks.at(-1)! - parkedAt);
    expect(waiting.waitUntil, "the parent's default budget (1 h) bounds the wait").toBe(waiting.createdAt + 3_600_000);
    expect(waiting.waitCheckAt, "the next check: twice the last one's age, but not past the deadline").toBe(Math.min(doubled, waiting.waitUntil!));
    await h.runtime.close({ abandon: true });
  });

  it.each([
    ["cancel_children", { status: "failed", errorCode: "cancelled_by_parent", error: "cancelled: parent settled" }],
    ["leave_running", undefined],
  ] as const)("a wait never outlasts the parent's budget: its calls are answered 'task wait expired' at its deadline, it settles timeout_exceeded, and its children follow onParentTerminal (%s)", async (onParentTerminal, childOutcome) => {
    const budgetMs = 10 * 60_000;
    const lead = scriptedAgent([[task("call-slow", "forever")], () => [{ text: "never reached" }]], { submissionTimeoutMs: budgetMs });
    const slow = scriptedAgent([[{ text: "thinking hard " }, { hang: "honest" }]], LONG_RUN);
    const h = await startTestServer({
      agents: { lead: lead.definition, researcher: slow.definition },
      // maxChildWaitMs unbounded: only the budget bounds the wait
      config: { subagents: { lead: ["researcher"] }, subagentLimits: { onParentTerminal } },
    });
    const parent = await h.runtime.dispatch({ agent: "lead", instance: "budget", message: user("go") });
    const childId = childAddress({ submissionId: parent.submissionId, instance: "budget" }, "call-slow").submissionId;
    for (let i = 0; i < 50 && (await h.store.getSubmission(parent.submissionId)).status !== "waiting"; i++) await settleTicks();
    const waiting = await h.store.getSubmission(parent.submissionId);
    expect(waiting.waitUntil, "the wait ends at the submission's own deadline").toBe(waiting.createdAt + budgetMs);
    await h.clock.advance(budgetMs);
    await settleTicks();
    await h.clock.advance(5_000); // the sweep's next tick
    const outcome = await h.runtime.wait(parent.submissionId);
    expect(outcome).toMatchObject({ status: "failed", errorCode: "timeout_exceeded" });
    expect(outcome.error).toMatch(/^durability timeout exceeded: admitted .* ago \(budget 10m/);
    expect(lead.scripted.calls, "no turn runs past the budget").toHaveLength(1);
    expect(outcomesOf(await allRecords(h.store, parent.conversationId))).toEqual([
      { callId: "call-slow", toolName: "task", content: [{ type: "text", text: "task wait expired" }], isError: true },
    ]);
    if (childOutcome) expect(await h.runtime.wait(childId)).toMatchObject(childOutcome);
    else expect((await h.store.getSubmission(childId)).status, "a leave_running child outlives its parent's budget").toBe("running");
    await h.runtime.close({ abandon: true });
  });
});
