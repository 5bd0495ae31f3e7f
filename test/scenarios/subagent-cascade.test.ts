/**
 * The orphan cascade (issue 10, embedded; the spec's TestOrphanCascade* cases): a parent that
 * settles cancels its unsettled children with `cancelled_by_parent` — queued and waiting ones
 * settle at once, running ones stop at their next safe point; settled children are left alone;
 * `onParentTerminal: "leave_running"` turns it off. Cancelling a waiting parent (the cancel
 * route) cascades the same way. States are seeded through the store (the conformance suite's
 * way of reaching mid-flight states), then driven through the runtime.
 */
import { describe, expect, it } from "vitest";
import { childAddress } from "../../src/conversation/task-names.ts";
import type { Store } from "../../src/store/store.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import { ManualClock } from "../../src/ports/clock.ts";
import { createMemoryStore } from "../../src/memory/index.ts";
import { namesOnlyAgents } from "../../src/agent/names-only-agents.ts";
import { allRecords, scriptedAgent, settleTicks, startTestServer } from "../support/runtime-kit.ts";
import { lastUserText as lastUser } from "../support/model-messages.ts";

const user = (body: string) => ({ kind: "user" as const, body });
const BY_PARENT = { status: "failed", error: "cancelled: parent settled", errorCode: "cancelled_by_parent" };
const agents = { lead: scriptedAgent([]).definition, researcher: scriptedAgent([]).definition };

/** A waiting parent with four children: queued, waiting, running (another owner's) and settled. */
async function seed(store: Store, clock: ManualClock) {
  const now = clock.now();
  const parent = (await store.admitSubmission({ id: "P", conversationId: "conv-P", sessionKey: { agent: "lead", instance: "i", session: "default" }, input: user("go"), createdAt: now })).submission;
  await store.claimSubmission({ submissionId: "P", attemptId: "pa", ownerId: "o", leaseExpiresAt: now + 30_000 });
  const calls = ["c-queued", "c-waiting", "c-running", "c-settled"];
  const ids: Record<string, string> = {};
  for (const callId of calls) {
    const at = childAddress({ submissionId: "P", instance: "i" }, callId);
    ids[callId] = at.submissionId;
    await store.admitSubmission({
      id: at.submissionId,
      conversationId: `conv-${callId}`,
      sessionKey: { agent: "researcher", instance: at.instance, session: at.session },
      input: user(callId),
      createdAt: now,
      parentSubmissionId: "P",
      parentCallId: callId,
      depth: 1,
    });
  }
  const claim = (id: string, attemptId: string) => store.claimSubmission({ submissionId: id, attemptId, ownerId: "elsewhere", leaseExpiresAt: now + 3_600_000 });
  await claim(ids["c-waiting"]!, "w1");
  await store.waitSubmission({ submissionId: ids["c-waiting"]!, attemptId: "w1" });
  await claim(ids["c-running"]!, "r1");
  await claim(ids["c-settled"]!, "s1");
  await store.reserveSettlement(ids["c-settled"]!, "s1", { outcome: { status: "succeeded" } });
  await store.finalizeSettlement(ids["c-settled"]!);
  await store.waitSubmission({ submissionId: "P", attemptId: "pa", pendingCalls: calls });
  return { parent, ids };
}

describe("orphan cascade (embedded)", () => {
  it("cancelling a waiting parent settles its queued and waiting children at once, flags the running one, leaves the settled one (TestOrphanCascadeSettlesQueuedChild, …SettlesWaitingChild, …SkipsSettledChild)", async () => {
    const clock = new ManualClock();
    const store = createMemoryStore({ clock });
    const { ids } = await seed(store, clock);
    // Not started: nothing runs; the cancel and its cascade are all that happens.
    const runtime = createRuntime({ agents, store, clock, subagents: { lead: ["researcher"] } });
    expect((await runtime.cancel("P", "stop all")).status).toBe("cancelled");
    expect(await store.getSubmission("P")).toMatchObject({ status: "settled", outcome: { errorCode: "cancelled", error: "cancelled: stop all" } });

    for (const key of ["c-queued", "c-waiting"]) {
      const child = await store.getSubmission(ids[key]!);
      expect(child, key).toMatchObject({ status: "settled", outcome: BY_PARENT });
      expect((await allRecords(store, child.conversationId)).filter((r) => r.kind === "submission_settled").map((r) => r.payload), key).toEqual([BY_PARENT]);
    }
    const running = await store.getSubmission(ids["c-running"]!);
    expect(running, "the running child stops at its next safe point (its owner learns it from its lease renewal)").toMatchObject({
      status: "running",
      cancelRequested: true,
      cancellation: { errorCode: "cancelled_by_parent", error: "cancelled: parent settled" },
    });
    expect(await store.getSubmission(ids["c-settled"]!)).toMatchObject({ status: "settled", outcome: { status: "succeeded" } });
    await runtime.close();
  });

  it("a child that settles on its own between the cascade's read and its cancel is left alone; the others are still cancelled and the parent's cancel completes", async () => {
    const clock = new ManualClock();
    const inner = createMemoryStore({ clock });
    const { ids } = await seed(inner, clock);
    // The race, made deterministic: c-queued is claimed and settles succeeded just before the
    // cascade's cancel of it reaches the store (which then refuses: its own outcome stands).
    const store = new Proxy(inner, {
      get(target, prop) {
        if (prop !== "cancelSubmission") {
          const value = Reflect.get(target, prop, target);
          return typeof value === "function" ? value.bind(target) : value; // private fields need the real receiver
        }
        return async (id: string, cancellation: Parameters<Store["cancelSubmission"]>[1]) => {
          if (id === ids["c-queued"]) {
            await target.claimSubmission({ submissionId: id, attemptId: "q1", ownerId: "elsewhere", leaseExpiresAt: clock.now() + 30_000 });
            await target.reserveSettlement(id, "q1", { outcome: { status: "succeeded" } });
            await target.finalizeSettlement(id);
          }
          return target.cancelSubmission(id, cancellation);
        };
      },
    }) as Store;
    const runtime = createRuntime({ agents, store, clock, subagents: { lead: ["researcher"] } });
    expect((await runtime.cancel("P", "stop all")).status).toBe("cancelled");
    expect(await store.getSubmission("P")).toMatchObject({ status: "settled", outcome: { errorCode: "cancelled" } });
    expect(await store.getSubmission(ids["c-queued"]!)).toMatchObject({ status: "settled", outcome: { status: "succeeded" } });
    expect(await store.getSubmission(ids["c-waiting"]!)).toMatchObject({ status: "settled", outcome: BY_PARENT });
    expect(await store.getSubmission(ids["c-running"]!)).toMatchObject({ status: "running", cancelRequested: true });
    await runtime.close();
  });

  it("gated on the policy: onParentTerminal leave_running cancels no child (TestOrphanCascadeGatedOnPolicy)", async () => {
    const clock = new ManualClock();
    const store = createMemoryStore({ clock });
    const { ids } = await seed(store, clock);
    const runtime = createRuntime({ agents, store, clock, subagents: { lead: ["researcher"] }, subagentLimits: { onParentTerminal: "leave_running" } });
    await runtime.cancel("P");
    expect((await store.getSubmission(ids["c-queued"]!)).status).toBe("queued");
    expect((await store.getSubmission(ids["c-waiting"]!)).status).toBe("waiting");
    expect((await store.getSubmission(ids["c-running"]!)).cancelRequested).toBe(false);
    await runtime.close();
  });

  it("a running child stops mid-stream and settles cancelled_by_parent, keeping its partial output, when its parent is cancelled (TestOrphanCascadeCancelsRunningChild)", async () => {
    let streaming!: () => void;
    const childStreaming = new Promise<void>((r) => (streaming = r));
    const lead = scriptedAgent([[{ toolCall: { id: "call-a", name: "task", arguments: { agent: "researcher", prompt: "long" } } }]]);
    const researcher = scriptedAgent([[{ text: "half an answer " }, { emit: () => streaming() }, { hang: "honest" }]]);
    const h = await startTestServer({ agents: { lead: lead.definition, researcher: researcher.definition }, config: { subagents: { lead: ["researcher"] } } });
    const parent = await h.runtime.dispatch({ agent: "lead", instance: "run", message: user("go") });
    await childStreaming;
    for (let i = 0; i < 50 && (await h.store.getSubmission(parent.submissionId)).status !== "waiting"; i++) await settleTicks();
    const childId = childAddress({ submissionId: parent.submissionId, instance: "run" }, "call-a").submissionId;
    expect((await h.store.getSubmission(childId)).status).toBe("running");

    await h.runtime.cancel(parent.submissionId, "user pressed stop");
    expect(await h.runtime.wait(parent.submissionId)).toMatchObject({ errorCode: "cancelled" });
    expect(await h.runtime.wait(childId)).toMatchObject(BY_PARENT);
    const childLog = await allRecords(h.store, (await h.store.getSubmission(childId)).conversationId);
    const text = childLog.filter((r) => r.kind === "assistant_text_delta").map((r) => (r.payload as { text: string }).text).join("");
    expect(text).toBe("half an answer ");
    // The parent settled first: the child's outcome is not delivered to it (first terminal state wins).
    expect((await allRecords(h.store, parent.conversationId)).filter((r) => r.kind === "tool_outcome")).toHaveLength(0);
    await h.runtime.close();
  });

  it("a queued child whose parent settled without cascading (a lost cascade) settles cancelled_by_parent when it is claimed", async () => {
    const clock = new ManualClock();
    const store = createMemoryStore({ clock });
    const { ids } = await seed(store, clock);
    // The parent is settled behind the engine's back: no cascade ran.
    await store.cancelSubmission("P", { errorCode: "cancelled", error: "cancelled: gone" });
    await store.finalizeSettlement("P");
    const h = await startTestServer({ agents, store, clock, config: { subagents: { lead: ["researcher"] } } });
    expect(await h.runtime.wait(ids["c-queued"]!)).toEqual(BY_PARENT);
    await h.runtime.close();
  });

  it("a parent whose crashed settlement a names-only process (the sweeper) finishes still cascades: it does not know the policy, so it lists", async () => {
    const clock = new ManualClock();
    const store = createMemoryStore({ clock });
    const { ids } = await seed(store, clock);
    // The parent was requeued, ran again and died mid-settlement (reserved, no record).
    await store.resumeSubmission("P");
    const again = await store.claimSubmission({ submissionId: "P", attemptId: "pa2", ownerId: "o", leaseExpiresAt: clock.now() + 30_000 });
    await store.reserveSettlement("P", again.attemptId!, { outcome: { status: "succeeded" } });
    const sweeper = createRuntime({ agents: namesOnlyAgents(["lead", "researcher"]), store, clock, leaseMs: 30_000 });
    await clock.advance(31_000); // past the settlement grace
    await sweeper.sweep();
    expect(await store.getSubmission("P")).toMatchObject({ status: "settled", outcome: { status: "succeeded" } });
    expect(await store.getSubmission(ids["c-queued"]!)).toMatchObject({ status: "settled", outcome: BY_PARENT });
    expect((await store.getSubmission(ids["c-running"]!)).cancelRequested).toBe(true);
    await sweeper.close();
  });

  it("the session's next submission answers a cancelled parent's unanswered task call interrupted: it spawns no child for it and does not wait on it", async () => {
    // The lead delegates "first" and answers "second" itself; the researcher never finishes.
    const lead = scriptedAgent(
      Array.from({ length: 4 }, () => (messages: unknown) =>
        lastUser(messages) === "second" ? [{ text: "answered myself" }] : [{ toolCall: { id: "call-a", name: "task", arguments: { agent: "researcher", prompt: "alpha" } } }],
      ),
    );
    const researcher = scriptedAgent([[{ text: "thinking " }, { hang: "honest" }]], { turnTimeoutMs: 86_400_000, submissionTimeoutMs: 86_400_000 });
    const h = await startTestServer({ agents: { lead: lead.definition, researcher: researcher.definition }, config: { subagents: { lead: ["researcher"] } } });
    const first = await h.runtime.dispatch({ agent: "lead", instance: "next", message: user("first") });
    for (let i = 0; i < 50 && (await h.store.getSubmission(first.submissionId)).status !== "waiting"; i++) await settleTicks();
    await h.runtime.cancel(first.submissionId);
    expect(await h.runtime.wait(first.submissionId)).toMatchObject({ status: "failed", errorCode: "cancelled" });

    const second = await h.runtime.dispatch({ agent: "lead", instance: "next", message: user("second") });
    expect(await h.runtime.wait(second.submissionId)).toMatchObject({ status: "succeeded" });
    const respawned = childAddress({ submissionId: second.submissionId, instance: "next" }, "call-a").submissionId;
    await expect(h.store.getSubmission(respawned), "no child for the earlier submission's call").rejects.toThrow(/not found/);
    const log = await allRecords(h.store, first.conversationId);
    const mine = log.filter((r) => r.submissionId === second.submissionId).map((r) => r.kind);
    expect(mine, "the call is answered (interrupted) before the new input; nothing is spawned").not.toContain("task_spawned");
    expect(log.filter((r) => r.kind === "tool_outcome" && r.payload.callId === "call-a")).toHaveLength(1);
    await h.runtime.close({ abandon: true });
  });
});
