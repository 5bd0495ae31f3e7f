/**
 * Races in subagents and cancel (issue 23 §2), each forced at the point where it bites: a cancel
 * between the parent's last lease renewal and its park, a wait ended by the parent's budget with
 * `leave_running` children, a child index that lags the parent's spawn, a crash between a
 * parent's finalize and its orphan cascade, and a provider that repeats call ids.
 */
import { describe, expect, it } from "vitest";
import { childAddress } from "../../src/conversation/task-names.ts";
import type { Store } from "../../src/store/store.ts";
import type { ScriptStep } from "../../src/agent/scripted-model.ts";
import { createMemoryStore } from "../../src/memory/index.ts";
import { ManualClock } from "../../src/ports/clock.ts";
import { allRecords, hangForever, scriptedAgent, settleTicks, startTestServer } from "../support/runtime-kit.ts";
import { textOf, toolResults } from "../support/model-messages.ts";

const user = (body: string) => ({ kind: "user" as const, body });
const spawnOne = (id = "call-1"): ScriptStep => [{ toolCall: { id, name: "task", arguments: { agent: "researcher", prompt: "dig" } } }];
const summary: ScriptStep = (messages) => [{ text: `summary: ${toolResults(messages).map(textOf).join(" | ")}` }];

/** A store whose `waitSubmission` first lets `before` run (another process acting at that instant). */
function beforeWait(inner: Store, before: (submissionId: string) => Promise<void>, overrides: Partial<Store> = {}): Store {
  return new Proxy(inner, {
    get(target, prop) {
      if (prop in overrides) return (overrides as Record<string | symbol, unknown>)[prop];
      if (prop === "waitSubmission") {
        return async (wait: Parameters<Store["waitSubmission"]>[0]) => {
          await before(wait.submissionId);
          return target.waitSubmission(wait);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as Store;
}

async function until(what: string, probe: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 2_000; i++) {
    if (await probe()) return;
    await settleTicks(5);
  }
  throw new Error(`never: ${what}`);
}

describe("cancel and the park", () => {
  it.for([
    ["the child index is current", false],
    ["the child index lags (a just-admitted child is not listed yet)", true],
  ] as const)("a cancel between the parent's last renewal and its park settles the parent cancelled and cancels its child (%s)", async ([, lagging]) => {
    const clock = new ManualClock();
    const inner = createMemoryStore({ clock });
    let cancelled = false;
    const store = beforeWait(
      inner,
      async (id) => {
        if (id !== "P" || cancelled) return;
        cancelled = true;
        // Another process's cancel lands after the renewal that would have told the owner.
        expect(await inner.cancelSubmission("P", { errorCode: "cancelled", error: "cancelled: stop" })).toEqual({ wasRunning: true });
      },
      lagging ? { listChildSubmissions: async () => [] } : {},
    );
    const lead = scriptedAgent([spawnOne(), summary]);
    const researcher = scriptedAgent([[{ hang: "honest" }]]);
    const h = await startTestServer({ clock, store, agents: { lead: lead.definition, researcher: researcher.definition }, config: { subagents: { lead: ["researcher"] } } });
    await h.runtime.dispatch({ agent: "lead", instance: "i", dispatchId: "P", message: user("go") });
    const child = childAddress({ submissionId: "P", instance: "i" }, "call-1").submissionId;
    await until("the parent settles", async () => (await inner.getSubmission("P")).status === "settled");
    expect(await inner.getSubmission("P")).toMatchObject({ status: "settled", outcome: { status: "failed", errorCode: "cancelled", error: "cancelled: stop" } });
    // Its child was running: flagged, and (its attempt in this process) stopped at once.
    await until("the child settles", async () => (await inner.getSubmission(child)).status === "settled");
    expect((await inner.getSubmission(child)).outcome).toMatchObject({ errorCode: "cancelled_by_parent" });
    expect(lead.scripted.calls, "the parent never resumed").toHaveLength(1);
    await h.runtime.close();
  });
});

describe("a cancel while a `task` call admits its child", () => {
  it("the call is held to its end: a task_spawned record names the child, and the cascade cancels it", async () => {
    const clock = new ManualClock();
    const inner = createMemoryStore({ clock });
    const child = childAddress({ submissionId: "P", instance: "i" }, "call-1").submissionId;
    let entered = false;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // The child's admission is slow (a store round trip under load): the cancel lands inside it.
    const store = beforeWait(inner, async () => {}, {
      admitSubmission: async (sub: Parameters<Store["admitSubmission"]>[0]) => {
        if (sub.id === child) {
          entered = true;
          await gate;
        }
        return inner.admitSubmission(sub);
      },
    });
    const lead = scriptedAgent([spawnOne(), summary]);
    const researcher = scriptedAgent([[{ hang: "honest" }]]);
    const h = await startTestServer({ clock, store, agents: { lead: lead.definition, researcher: researcher.definition }, config: { subagents: { lead: ["researcher"] } } });
    await h.runtime.dispatch({ agent: "lead", instance: "i", dispatchId: "P", message: user("go") });
    await until("the child's admission starts", async () => entered);
    const cancelling = h.runtime.cancel("P", "stop");
    await settleTicks(50);
    release();
    await cancelling;
    await until("the parent settles", async () => (await inner.getSubmission("P")).status === "settled");
    expect((await inner.getSubmission("P")).outcome).toMatchObject({ status: "failed", errorCode: "cancelled" });
    const log = await allRecords(inner, (await inner.getSubmission("P")).conversationId);
    const spawned = log.filter((r) => r.kind === "task_spawned").map((r) => (r.payload as { childSubmissionId: string }).childSubmissionId);
    expect(spawned, "the parent's log names its child").toEqual([child]);
    await until("the child settles", async () => (await inner.getSubmission(child)).status === "settled");
    expect((await inner.getSubmission(child)).outcome).toMatchObject({ errorCode: "cancelled_by_parent" });
    await h.runtime.close();
  });
});

describe("wait expiry decides by the bound that ended the wait", () => {
  it("a wait ended by the parent's budget (maxWaitMs longer) leaves a leave_running child running", async () => {
    const clock = new ManualClock();
    const store = createMemoryStore({ clock });
    const lead = scriptedAgent([spawnOne(), summary], { submissionTimeoutMs: 60_000 });
    const researcher = scriptedAgent([[{ hang: "honest" }]]);
    const h = await startTestServer({
      clock,
      store,
      agents: { lead: lead.definition, researcher: researcher.definition },
      config: { subagents: { lead: ["researcher"] }, subagentLimits: { maxChildWaitMs: 3_600_000, onParentTerminal: "leave_running" } },
    });
    await h.runtime.dispatch({ agent: "lead", instance: "i", dispatchId: "P", message: user("go") });
    const child = childAddress({ submissionId: "P", instance: "i" }, "call-1").submissionId;
    await until("the parent waits", async () => (await store.getSubmission("P")).status === "waiting");
    expect((await store.getSubmission("P")).waitUntil, "the budget bounds the wait").toBeLessThan(clock.now() + 3_600_000);
    await clock.advance(61_000);
    await h.runtime.sweep();
    await until("the parent settles", async () => (await store.getSubmission("P")).status === "settled");
    expect((await store.getSubmission("P")).outcome).toMatchObject({ errorCode: "timeout_exceeded" });
    const c = await store.getSubmission(child);
    expect(c, "leave_running: the child runs on").toMatchObject({ status: "running", cancelRequested: false });
    await h.runtime.close();
  });
});

describe("the orphan cascade survives a crash after the parent's finalize", () => {
  it("a parent cancelled while it waits, killed right after its finalize: its running child was already cancelled", async () => {
    const clock = new ManualClock();
    const store = createMemoryStore({ clock });
    const lead = scriptedAgent([spawnOne(), summary]);
    const researcher = scriptedAgent([[{ hang: "honest" }]]);
    let reached = false;
    const h = await startTestServer({
      clock,
      store,
      agents: { lead: lead.definition, researcher: researcher.definition },
      config: { subagents: { lead: ["researcher"] } },
      faults: (phase, id) => {
        if (phase !== "finalized" || id !== "P") return;
        reached = true;
        return hangForever(); // the process dies here
      },
    });
    await h.runtime.dispatch({ agent: "lead", instance: "i", dispatchId: "P", message: user("go") });
    const child = childAddress({ submissionId: "P", instance: "i" }, "call-1").submissionId;
    await until("the parent waits and its child runs", async () => (await store.getSubmission("P")).status === "waiting" && (await store.getSubmission(child)).status === "running");
    void h.runtime.cancel("P", "stop");
    await until("the finalize", async () => reached);
    expect((await store.getSubmission("P")).status).toBe("settled");
    expect(await store.getSubmission(child), "cancelled before the parent's finalize").toMatchObject({ cancelRequested: true, cancellation: { errorCode: "cancelled_by_parent" } });
    await h.runtime.close({ abandon: true });
  });
});

describe("child names", () => {
  it("a provider that repeats call ids across submissions puts each child in its own session", async () => {
    const lead = scriptedAgent([spawnOne("call_0"), summary, spawnOne("call_0"), summary]);
    const researcher = scriptedAgent(Array.from({ length: 4 }, () => (messages) => [{ text: `answer ${messages.filter((m) => m.role === "user").length}` }]));
    const h = await startTestServer({ agents: { lead: lead.definition, researcher: researcher.definition }, config: { subagents: { lead: ["researcher"] } } });
    const first = await h.runtime.dispatch({ agent: "lead", instance: "i", dispatchId: "P1", message: user("one") });
    expect((await h.runtime.wait(first.submissionId)).status).toBe("succeeded");
    const second = await h.runtime.dispatch({ agent: "lead", instance: "i", dispatchId: "P2", message: user("two") });
    expect((await h.runtime.wait(second.submissionId)).status).toBe("succeeded");
    // The second call_0 is renamed in the conversation (call_0_2: ids are unique in a log), and its
    // child is named after its own parent submission either way.
    const spawned = (await allRecords(h.store, second.conversationId)).filter((r) => r.kind === "task_spawned").map((r) => r.payload as { callId: string; childSubmissionId: string });
    expect(spawned.map((p) => p.callId)).toEqual(["call_0", "call_0_2"]);
    const [c1, c2] = await Promise.all(spawned.map((p) => h.store.getSubmission(p.childSubmissionId)));
    expect(c1!.id).toBe(childAddress({ submissionId: "P1", instance: "i" }, "call_0").submissionId);
    expect(c2!.id).toBe(childAddress({ submissionId: "P2", instance: "i" }, "call_0_2").submissionId);
    expect(c1!.sessionKey, "two children, two sessions").not.toEqual(c2!.sessionKey);
    expect(c1!.conversationId).not.toBe(c2!.conversationId);
    // Each child saw only its own prompt: the second did not continue the first's conversation.
    const log = await allRecords(h.store, second.conversationId);
    expect(JSON.stringify(log.filter((r) => r.kind === "tool_outcome").at(-1)?.payload)).toContain("answer 1");
    await h.runtime.close();
  });
});

describe("a cancel reaches a running attempt through its appends", () => {
  it("a cancel made elsewhere stops a streaming reply at its next delta flush, long before the next lease renewal", async () => {
    const clock = new ManualClock();
    const store = createMemoryStore({ clock });
    let at: string | undefined;
    const words = Array.from({ length: 40 }, (_, i) => ({ text: `w${i} ` }));
    const assistant = scriptedAgent([
      [
        ...words.slice(0, 10),
        {
          emit: async () => {
            // Another process's cancel (the http function): no heartbeat of this one is poked, and
            // the manual clock never reaches the next renewal.
            at = (await store.getSubmission("S")).status;
            expect(await store.cancelSubmission("S", { errorCode: "cancelled", error: "cancelled: enough" })).toEqual({ wasRunning: true });
          },
        },
        ...words.slice(10),
      ],
    ]);
    const h = await startTestServer({ clock, store, agents: { assistant: assistant.definition }, config: { flushPolicy: { bytes: 0, intervalMs: 0 } } });
    await h.runtime.dispatch({ agent: "assistant", instance: "i", dispatchId: "S", message: user("talk") });
    const settled = await h.runtime.wait("S");
    expect(at).toBe("running");
    expect(settled).toMatchObject({ status: "failed", errorCode: "cancelled", error: "cancelled: enough" });
    const text = (await allRecords(store, (await store.getSubmission("S")).conversationId))
      .filter((r) => r.kind === "assistant_text_delta")
      .map((r) => (r.payload as { text: string }).text)
      .join("");
    expect(text, "stopped within a flush or two of the cancel").not.toContain("w30");
    await h.runtime.close();
  });
});

describe("a cancel that loses the race", () => {
  it("a run that settled on its own after a cancel was requested: the next cancel's answer says the cancel lost the race", async () => {
    const clock = new ManualClock();
    const store = createMemoryStore({ clock });
    const h = await startTestServer({ clock, store, agents: { assistant: scriptedAgent([]).definition } });
    await store.admitSubmission({ id: "R", conversationId: "conv-R", sessionKey: { agent: "assistant", instance: "i", session: "default" }, input: user("x"), createdAt: clock.now() });
    await store.claimSubmission({ submissionId: "R", attemptId: "a", ownerId: "elsewhere", leaseExpiresAt: clock.now() + 30_000 });
    expect((await h.runtime.cancel("R", "stop")).status).toBe("cancelling");
    // The run's own end, before it learnt of the cancel.
    await store.reserveSettlement("R", "a", { outcome: { status: "succeeded" } });
    await store.finalizeSettlement("R");
    await expect(h.runtime.cancel("R", "again")).rejects.toThrow(/settled succeeded: the run ended before the cancel requested earlier reached it \(the cancel lost the race\)/);
    await h.runtime.close();
  });
});
