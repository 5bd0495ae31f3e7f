import { describe, expect, it } from "vitest";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { isHarnessError } from "../../../src/errors.ts";
import type { EnginePhase } from "../../../src/engine/engine-context.ts";
import type { HarnessEvent } from "../../../src/ports/observer.ts";
import type { DispatchMessage } from "../../../src/store/submission.ts";
import { allRecords, hangForever, scriptedAgent, settleTicks, startTestServer } from "../../support/runtime-kit.ts";

const user = (body: string) => ({ kind: "user" as const, body });
const kinds = (records: ConversationRecord[]) => records.map((r) => r.kind);
const settledRecords = (records: ConversationRecord[], submissionId: string) =>
  records.filter((r) => r.kind === "submission_settled" && r.submissionId === submissionId);

describe("runtime: dispatch → drive → settle", () => {
  it("runs a submission to a succeeded settlement with the canonical records", async () => {
    const { definition } = scriptedAgent([[{ text: "hello there" }]]);
    const h = await startTestServer({ agents: { assistant: definition } });
    const { submissionId, conversationId, replayed } = await h.runtime.dispatch({
      agent: "assistant",
      instance: "w1",
      message: user("hi"),
    });
    expect(replayed).toBe(false);
    const payload = await h.runtime.wait(submissionId);
    expect(payload).toEqual({ status: "succeeded", usage: { input: 0, output: expect.any(Number), cacheRead: 0, cacheWrite: 0, totalTokens: expect.any(Number) } });
    const records = await allRecords(h.store, conversationId);
    expect(kinds(records)[0]).toBe("conversation_created");
    expect(kinds(records)).toContain("user_message");
    expect(kinds(records)).toContain("assistant_message_started");
    expect(kinds(records)).toContain("assistant_text_delta");
    expect(kinds(records).at(-2)).toBe("assistant_message_completed");
    expect(kinds(records).at(-1)).toBe("submission_settled");
    const ids = records.map((r) => r.id);
    expect([...ids].sort()).toEqual(ids);
    const sub = await h.store.getSubmission(submissionId);
    expect(sub.status).toBe("settled");
    expect(sub.attemptCount).toBe(1);
    await h.runtime.close();
  });

  it("replays an identical dispatch id and refuses a changed payload, storing nothing new", async () => {
    const { definition } = scriptedAgent([[{ text: "a" }]]);
    const h = await startTestServer({ agents: { assistant: definition } });
    const first = await h.runtime.dispatch({ agent: "assistant", instance: "w", dispatchId: "d-1", message: user("x") });
    // Within the same millisecond (the test clock stands still): still a replay.
    const again = await h.runtime.dispatch({ agent: "assistant", instance: "w", dispatchId: "d-1", message: user("x") });
    expect(again).toEqual({ ...first, replayed: true });
    await h.clock.advance(5);
    expect(await h.runtime.dispatch({ agent: "assistant", instance: "w", dispatchId: "d-1", message: user("x") })).toEqual({ ...first, replayed: true });
    await expect(
      h.runtime.dispatch({ agent: "assistant", instance: "w", dispatchId: "d-1", message: user("changed") }),
    ).rejects.toMatchObject({ code: "dispatch_conflict" });
    await h.runtime.wait(first.submissionId);
    const subs = await h.store.listByStatus("settled");
    expect(subs.map((s) => s.id)).toEqual(["d-1"]);
    await h.runtime.close();
  });

  it("rejects invalid dispatches at admission and stores nothing", async () => {
    const { definition } = scriptedAgent([]);
    const h = await startTestServer({ agents: { assistant: definition } });
    const bad: Array<[unknown, string]> = [
      [{ agent: "nobody", instance: "w", message: user("x") }, "unknown_agent"],
      [{ agent: "assistant", instance: "", message: user("x") }, "invalid_request"],
      [{ agent: "assistant", instance: "w/x", message: user("x") }, "invalid_request"],
      [{ agent: "assistant", instance: "w", session: "a b", message: user("x") }, "invalid_request"],
      [{ agent: "assistant", instance: "w", dispatchId: "a/b", message: user("x") }, "invalid_request"],
      [{ agent: "assistant", instance: "w", message: { kind: "user", body: "" } }, "invalid_dispatch"],
      [{ agent: "assistant", instance: "w", message: { kind: "shout", body: "x" } }, "invalid_dispatch"],
      [{ agent: "assistant", instance: "w", message: { kind: "signal", body: "x" } }, "invalid_dispatch"],
      [{ agent: "assistant", instance: "w", message: { kind: "user", body: "x", signal: { type: "t" } } }, "invalid_dispatch"],
    ];
    for (const [request, code] of bad) {
      const err = await h.runtime.dispatch(request as never).catch((e: unknown) => e);
      expect(isHarnessError(err, code as never), `${JSON.stringify(request)} → ${String(err)}`).toBe(true);
    }
    for (const status of ["queued", "running", "waiting", "terminalizing", "settled"] as const) {
      expect(await h.store.listByStatus(status)).toEqual([]);
    }
    await expect(h.store.getConversation({ agent: "assistant", instance: "w", session: "default" })).rejects.toMatchObject({
      code: "conversation_not_found",
    });
    await h.runtime.close();
  });

  it("serializes a session and runs different sessions concurrently", async () => {
    const order: string[] = [];
    const gates = new Map<string, () => void>();
    const gate = (name: string) =>
      ({
        emit: async () => {
          order.push(`start ${name}`);
          await new Promise<void>((r) => gates.set(name, r));
          order.push(`end ${name}`);
        },
      }) as const;
    const { definition } = scriptedAgent([
      [gate("s1-a"), { text: "a" }],
      [gate("s2"), { text: "b" }],
      [gate("s1-b"), { text: "c" }],
    ]);
    const h = await startTestServer({ agents: { assistant: definition } });
    const a = await h.runtime.dispatch({ agent: "assistant", instance: "w", session: "s1", message: user("1") });
    const b = await h.runtime.dispatch({ agent: "assistant", instance: "w", session: "s1", message: user("2") });
    const c = await h.runtime.dispatch({ agent: "assistant", instance: "w", session: "s2", message: user("3") });
    await settleTicks();
    // s1's first and s2's run start together; s1's second waits for the first to settle.
    expect(order).toEqual(["start s1-a", "start s2"]);
    expect((await h.store.getSubmission(b.submissionId)).status).toBe("queued");
    gates.get("s1-a")!();
    await h.runtime.wait(a.submissionId);
    await settleTicks();
    expect(order).toContain("start s1-b");
    gates.get("s2")!();
    gates.get("s1-b")!();
    await h.runtime.wait(b.submissionId);
    await h.runtime.wait(c.submissionId);
    await h.runtime.close();
  });
});

describe("runtime: crash recovery (a runtime dropped between engine phases)", () => {
  async function crashAt(
    phase: EnginePhase,
    steps = [[{ text: "done" }]] as Parameters<typeof scriptedAgent>[0],
    message: Partial<DispatchMessage> = {},
  ) {
    const { definition } = scriptedAgent(steps);
    let crashed = false;
    const h = await startTestServer({
      agents: { assistant: definition },
      faults: (p) => {
        if (p === phase && !crashed) {
          crashed = true;
          return hangForever();
        }
      },
    });
    const { submissionId, conversationId } = await Promise.race([
      h.runtime.dispatch({ agent: "assistant", instance: "w", dispatchId: "crash-1", message: { ...user("go"), ...message } }),
      // A crash right after admission never answers the client; the ids are the dispatch's, once
      // it is stored (a result schema is checked on its thread first, which takes a moment).
      settleTicks(50).then(async () => {
        for (let i = 0; ; i++) {
          const sub = await h.store.getSubmission("crash-1").catch((err: unknown) => (i < 400 ? undefined : Promise.reject(err)));
          if (sub) return { submissionId: sub.id, conversationId: sub.conversationId };
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      }),
    ]);
    await settleTicks();
    // A result schema checks the reply on its thread before the reservation: real time, not ticks.
    for (let i = 0; !crashed && i < 400; i++) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(crashed).toBe(true);
    await h.runtime.close({ abandon: true });
    return { h, submissionId, conversationId };
  }

  async function recover(h: Awaited<ReturnType<typeof crashAt>>["h"], submissionId: string) {
    const runtime = await h.restart({ faults: undefined });
    const waiting = runtime.wait(submissionId);
    // Past the lease (and the settlement grace) so the sweep reclaims what the dead runtime held.
    await h.clock.advance(31_000);
    await h.clock.advance(5_000);
    const payload = await waiting;
    await runtime.close();
    return payload;
  }

  it("post-admit: the restarted runtime's startup sweep rings the queued head", async () => {
    const { h, submissionId, conversationId } = await crashAt("admitted");
    const payload = await recover(h, submissionId);
    expect(payload.status).toBe("succeeded");
    expect(settledRecords(await allRecords(h.store, conversationId), submissionId)).toHaveLength(1);
    expect((await h.store.getSubmission(submissionId)).attemptCount).toBe(1);
  });

  it("post-claim (before the attempt marker): the lease expires and a fresh attempt settles it", async () => {
    const { h, submissionId, conversationId } = await crashAt("claimed");
    const payload = await recover(h, submissionId);
    expect(payload.status).toBe("succeeded");
    expect(settledRecords(await allRecords(h.store, conversationId), submissionId)).toHaveLength(1);
    expect((await h.store.getSubmission(submissionId)).attemptCount).toBe(2);
    expect(await h.store.listAttempts(submissionId)).toHaveLength(1);
  });

  it("mid-turn: a runtime dropped while the model streams is recovered by a fresh attempt", async () => {
    const { definition } = scriptedAgent([
      [{ text: "partial answer" }, { hang: "deaf" }],
      [{ text: "second try" }],
    ]);
    const h = await startTestServer({ agents: { assistant: definition } });
    const { submissionId, conversationId } = await h.runtime.dispatch({
      agent: "assistant",
      instance: "w",
      message: user("go"),
    });
    await settleTicks(50);
    expect((await h.store.getSubmission(submissionId)).status).toBe("running");
    await h.runtime.close({ abandon: true });
    const payload = await recover(h, submissionId);
    expect(payload.status).toBe("succeeded");
    const records = await allRecords(h.store, conversationId);
    expect(settledRecords(records, submissionId)).toHaveLength(1);
    const attempts = new Set(records.filter((r) => r.attemptId).map((r) => r.attemptId));
    expect(attempts.size).toBe(2);
    expect(records.filter((r) => r.kind === "user_message")).toHaveLength(1);
    expect((await h.store.getSubmission(submissionId)).attemptCount).toBe(2);
  });

  it("post-reserve, no record: the outcome stored with the reservation settles it, exactly once", async () => {
    const { h, submissionId, conversationId } = await crashAt("reserved", [[{ text: '{"answer":42}' }]], { resultSchema: { type: "object" } });
    const reserved = await h.store.getSubmission(submissionId);
    expect(reserved.status).toBe("terminalizing");
    expect(reserved.outcome, "the reservation carries the run's outcome").toMatchObject({ status: "succeeded", result: { answer: 42 } });
    expect(reserved.outcome?.usage, "usage included").toBeDefined();
    const payload = await recover(h, submissionId);
    // A finished run is never reported as failed.
    expect(payload).toEqual(reserved.outcome);
    const settled = settledRecords(await allRecords(h.store, conversationId), submissionId);
    expect(settled.map((r) => r.payload)).toEqual([reserved.outcome]);
    expect((await h.store.getSubmission(submissionId)).attemptCount).toBe(1);
  });

  it("post-reserve of a row reserved without an outcome (an older row): settlement_indeterminate exactly once", async () => {
    const { definition } = scriptedAgent([[{ text: "unused" }]]);
    const h = await startTestServer({ agents: { assistant: definition } });
    await h.runtime.close();
    // Reserved by an older version of the engine: no outcome on the row.
    const { conversation } = await h.store.ensureConversation({ id: "conv-old", key: { agent: "assistant", instance: "w", session: "default" }, createdAt: h.clock.now() });
    await h.store.admitSubmission({ id: "old-1", conversationId: conversation.id, sessionKey: conversation.key, input: user("go"), createdAt: h.clock.now() });
    await h.store.claimSubmission({ submissionId: "old-1", attemptId: "a-old", ownerId: "gone", leaseExpiresAt: h.clock.now() + 30_000 });
    await h.store.reserveSettlement("old-1", "a-old");
    const payload = await recover(h, "old-1");
    expect(payload).toEqual({
      status: "failed",
      error: "process crashed during settlement; run outcome unknown",
      errorCode: "settlement_indeterminate",
    });
    expect(settledRecords(await allRecords(h.store, conversation.id), "old-1")).toHaveLength(1);
  });

  it("post-record, before finalize: the recorded outcome wins", async () => {
    const { h, submissionId, conversationId } = await crashAt("settled_recorded");
    const payload = await recover(h, submissionId);
    expect(payload).toMatchObject({ status: "succeeded" });
    expect(settledRecords(await allRecords(h.store, conversationId), submissionId)).toHaveLength(1);
  });
});

describe("runtime: budgets and error classes", () => {
  it("settles attempt_budget_exhausted with the last error once transient errors spend the budget", async () => {
    const steps = Array.from({ length: 5 }, () => [{ error: "503 service unavailable" }]);
    const { definition } = scriptedAgent(steps, { maxAttempts: 3 });
    const h = await startTestServer({ agents: { assistant: definition } });
    const { submissionId } = await h.runtime.dispatch({ agent: "assistant", instance: "w", message: user("x") });
    const waiting = h.runtime.wait(submissionId);
    for (let i = 0; i < 10; i++) await h.clock.advance(5_000);
    const payload = await waiting;
    expect(payload.errorCode).toBe("attempt_budget_exhausted");
    expect(payload.error).toBe("attempt budget exhausted: attempt 4 exceeds max 3; last error: 503 service unavailable");
    expect(h.events.filter((e) => e.type === "recovery" && e.decision === "transient_backoff")).toHaveLength(3);
    await h.runtime.close();
  });

  it("settles a provider-fatal error on the first attempt", async () => {
    const { definition } = scriptedAgent([[{ error: "401 authentication_error: invalid x-api-key" }]]);
    const h = await startTestServer({ agents: { assistant: definition } });
    const { submissionId } = await h.runtime.dispatch({ agent: "assistant", instance: "w", message: user("x") });
    const payload = await h.runtime.wait(submissionId);
    expect(payload.status).toBe("failed");
    expect(payload.errorCode).toBe("run_failed");
    expect((await h.store.getSubmission(submissionId)).attemptCount).toBe(1);
    await h.runtime.close();
  });

  it("settles timeout_exceeded when the durability budget ran out before the claim", async () => {
    const { definition } = scriptedAgent([[{ text: "never" }]], { submissionTimeoutMs: 1_000 });
    let hold!: () => void;
    const h = await startTestServer({
      agents: { assistant: definition },
      faults: (phase) => (phase === "admitted" ? new Promise<void>((r) => (hold = r)) : undefined),
    });
    const dispatched = h.runtime.dispatch({ agent: "assistant", instance: "w", message: user("x") });
    await settleTicks();
    await h.clock.advance(2_000);
    hold();
    const { submissionId } = await dispatched;
    const payload = await h.runtime.wait(submissionId);
    expect(payload).toEqual({
      status: "failed",
      errorCode: "timeout_exceeded",
      error: "durability timeout exceeded: admitted 2s ago (budget 1s)",
    });
    await h.runtime.close();
  });

  it("settles run_failed when the initializer throws", async () => {
    const h = await startTestServer({
      agents: {
        assistant: {
          initialize: () => {
            throw new Error("tenant config missing");
          },
        },
      },
    });
    const { submissionId } = await h.runtime.dispatch({ agent: "assistant", instance: "w", message: user("x") });
    // At once (ADR 0052), naming the agent, with the frames of the agent's code and none of the harness's.
    const settled = await h.runtime.wait(submissionId);
    expect(settled).toMatchObject({ status: "failed", errorCode: "run_failed" });
    const [head, ...frames] = (settled.error ?? "").split("\n");
    expect(head).toBe("agent assistant: initialize threw: Error: tenant config missing");
    expect(frames.length).toBeGreaterThan(0);
    expect(frames.every((f) => f.includes("test/unit/runtime/runtime.test.ts"))).toBe(true);
    await h.runtime.close();
  });
});

describe("runtime: steer and follow-up through the durable inbox", () => {
  it("steers a live run at its next turn boundary; NoRunInFlight when idle", async () => {
    let steerResult: unknown;
    const h = await (async () => {
      const holder: { runtime?: import("../../../src/runtime/runtime.ts").Runtime } = {};
      const { definition, scripted } = scriptedAgent([
        [
          {
            emit: async () => {
              steerResult = await holder.runtime!.steer({ agent: "assistant", instance: "w", body: "be brief" });
            },
          },
          { toolCall: { id: "c1", name: "noop", arguments: {} } },
        ],
        (messages) => [{ text: `saw: ${JSON.stringify(messages.at(-1))}` }],
      ]);
      const noop = {
        name: "noop",
        label: "noop",
        description: "does nothing",
        parameters: { type: "object", properties: {} },
        execute: async () => ({ content: [{ type: "text" as const, text: "ok" }], details: {} }),
      };
      const harness = await startTestServer({
        agents: { assistant: { initialize: () => ({ model: scripted.model, streamFn: scripted.streamFn, tools: [noop] }) } },
      });
      holder.runtime = harness.runtime;
      return Object.assign(harness, { scripted });
    })();
    await expect(h.runtime.steer({ agent: "assistant", instance: "w", body: "nobody home" })).rejects.toMatchObject({
      code: "no_run_in_flight",
    });
    const { submissionId, conversationId } = await h.runtime.dispatch({ agent: "assistant", instance: "w", message: user("go") });
    expect((await h.runtime.wait(submissionId)).status).toBe("succeeded");
    expect(steerResult).toBeUndefined();
    const records = await allRecords(h.store, conversationId);
    const steer = records.find((r) => r.kind === "user_message" && r.payload.origin === "steer");
    expect(steer?.payload).toMatchObject({ body: "be brief", origin: "steer" });
    // The steer lands after the tool outcome and before the next assistant turn.
    const idx = records.indexOf(steer!);
    expect(records[idx - 1]?.kind).toBe("tool_outcome");
    expect(records.slice(idx + 1).some((r) => r.kind === "assistant_message_started")).toBe(true);
    expect(JSON.stringify(h.scripted.calls[1]?.messages.at(-1))).toContain("be brief");
    await expect(h.runtime.steer({ agent: "ghost", instance: "w", body: "x" })).rejects.toMatchObject({ code: "unknown_agent" });
    await h.runtime.close();
  });

  it("delivers a steer that lands after the last turn: settlement waits for one more turn", async () => {
    const holder: { runtime?: import("../../../src/runtime/runtime.ts").Runtime } = {};
    let injected = false;
    const { definition, scripted } = scriptedAgent([[{ text: "first answer" }], [{ text: "second answer" }]]);
    const h = await startTestServer({
      agents: { assistant: definition },
      // After the drive returns and before settlement reserves: the worst moment for a steer.
      interceptors: [
        async (info, next) => {
          await next();
          if (info.kind === "attempt" && !injected) {
            injected = true;
            await holder.runtime!.followUp({ agent: "assistant", instance: "w", body: "one more thing" });
          }
        },
      ],
    });
    holder.runtime = h.runtime;
    const { submissionId, conversationId } = await h.runtime.dispatch({ agent: "assistant", instance: "w", message: user("go") });
    expect((await h.runtime.wait(submissionId)).status).toBe("succeeded");
    expect(scripted.calls).toHaveLength(2);
    const records = await allRecords(h.store, conversationId);
    const texts = records
      .filter((r) => r.kind === "user_message")
      .map((r) => (r.kind === "user_message" ? r.payload.body : ""));
    expect(texts).toEqual(["go", "one more thing"]);
    expect(settledRecords(records, submissionId)).toHaveLength(1);
    await h.runtime.close();
  });
});

describe("runtime: observers and interceptors", () => {
  it("reports the lifecycle with correlation ids; a throwing observer never fails the run", async () => {
    const { definition } = scriptedAgent([[{ text: "hi" }]]);
    const observerErrors: unknown[] = [];
    const h = await startTestServer({
      agents: { assistant: definition },
      observers: [
        () => {
          throw new Error("observer bug");
        },
      ],
      onObserverError: (err) => observerErrors.push(err),
    });
    const { submissionId, conversationId } = await h.runtime.dispatch({ agent: "assistant", instance: "w", message: user("x") });
    expect((await h.runtime.wait(submissionId)).status).toBe("succeeded");
    const types = h.events.map((e) => e.type);
    for (const t of ["submission_admitted", "submission_claimed", "attempt_started", "operation_started", "turn_started", "delta", "turn_ended", "operation_ended", "submission_settled"] as const) {
      expect(types, t).toContain(t);
    }
    const claimed = h.events.find((e) => e.type === "submission_claimed") as Extract<HarnessEvent, { type: "submission_claimed" }>;
    expect(claimed.correlation).toMatchObject({ conversationId, submissionId });
    expect(claimed.correlation.attemptId).toBeTruthy();
    const turn = h.events.find((e) => e.type === "turn_started")!;
    expect(turn.correlation.attemptId).toBe(claimed.correlation.attemptId);
    expect(turn.correlation.turnId).toBeTruthy();
    expect(observerErrors.length).toBe(h.events.length);
    await h.runtime.close();
  });

  it("runs interceptors first-registered-outermost; one that does not call next fails the run", async () => {
    const { definition } = scriptedAgent([[{ text: "hi" }]]);
    const trace: string[] = [];
    const h = await startTestServer({
      agents: { assistant: definition },
      interceptors: [
        async (info, next) => {
          trace.push(`outer>${info.kind}`);
          await next();
          trace.push(`outer<${info.kind}`);
        },
        async (info, next) => {
          trace.push(`inner>${info.kind}`);
          await next();
          trace.push(`inner<${info.kind}`);
        },
      ],
    });
    const { submissionId } = await h.runtime.dispatch({ agent: "assistant", instance: "w", message: user("x") });
    await h.runtime.wait(submissionId);
    expect(trace.slice(0, 2)).toEqual(["outer>attempt", "inner>attempt"]);
    expect(trace.slice(-2)).toEqual(["inner<attempt", "outer<attempt"]);
    expect(trace).toContain("outer>turn");
    await h.runtime.close();

    const blocked = await startTestServer({
      agents: { assistant: scriptedAgent([[{ text: "hi" }]]).definition },
      interceptors: [async () => {}],
    });
    const { submissionId: id2 } = await blocked.runtime.dispatch({ agent: "assistant", instance: "w", message: user("x") });
    const payload = await blocked.runtime.wait(id2);
    expect(payload.status).toBe("failed");
    expect(payload.errorCode).toBe("run_failed");
    await blocked.runtime.close();
  });
});

describe("runtime: review follow-ups", () => {
  it("renews the lease while a slow initializer runs (no second attempt starts meanwhile)", async () => {
    const { scripted } = scriptedAgent([[{ text: "done" }]]);
    let release!: () => void;
    const slowInit = new Promise<void>((r) => (release = r));
    const h = await startTestServer({
      agents: {
        assistant: {
          initialize: async () => {
            await slowInit;
            return { model: scripted.model, streamFn: scripted.streamFn };
          },
        },
      },
    });
    const { submissionId } = await h.runtime.dispatch({ agent: "assistant", instance: "w", message: user("x") });
    await settleTicks();
    // Two leases' worth of time pass inside the initializer; the heartbeat keeps the lease.
    for (let i = 0; i < 6; i++) await h.clock.advance(10_000);
    const sub = await h.store.getSubmission(submissionId);
    expect(sub.status).toBe("running");
    expect(sub.leaseExpiresAt).toBeGreaterThan(h.clock.now());
    expect(await h.runtime.sweep()).toMatchObject({ reclaimed: 0 });
    release();
    expect((await h.runtime.wait(submissionId)).status).toBe("succeeded");
    expect((await h.store.getSubmission(submissionId)).attemptCount).toBe(1);
    await h.runtime.close();
  });

  it("a doorbell for a settled submission rings the session's queued next head", async () => {
    const { definition } = scriptedAgent([[{ text: "one" }], [{ text: "two" }]]);
    const h = await startTestServer({ agents: { assistant: definition } });
    const first = await h.runtime.dispatch({ agent: "assistant", instance: "w", message: user("1") });
    await h.runtime.wait(first.submissionId);
    await h.runtime.close();
    // A second submission admitted while no runtime consumes the queue: its doorbell is lost.
    const runtime2 = (await import("../../../src/runtime/runtime.ts")).createRuntime({
      agents: { assistant: definition },
      store: h.store,
      clock: h.clock,
      queue: { ring: async () => {} },
    });
    const second = await runtime2.dispatch({ agent: "assistant", instance: "w", message: user("2") });
    expect((await h.store.getSubmission(second.submissionId)).status).toBe("queued");
    // A late duplicate of the first submission's doorbell arrives at a live consumer, once the
    // head has waited longer than a lease (sooner, its own ring is presumed still on its way).
    h.clock.set(h.clock.now() + 30_000);
    const rung: string[] = [];
    const runtime3 = (await import("../../../src/runtime/runtime.ts")).createRuntime({
      agents: { assistant: definition },
      store: h.store,
      clock: h.clock,
      queue: { ring: async (d) => void rung.push(d.submissionId) },
    });
    expect(await runtime3.handleDoorbell({ submissionId: first.submissionId, group: "assistant/w/default" })).toEqual({ kind: "ack" });
    expect(rung).toEqual([second.submissionId]);
  });

  it("rejects pending waits with RuntimeClosed on close", async () => {
    const { definition } = scriptedAgent([[{ hang: "honest" }]]);
    const h = await startTestServer({ agents: { assistant: definition } });
    const { submissionId } = await h.runtime.dispatch({ agent: "assistant", instance: "w", message: user("x") });
    const waiting = h.runtime.wait(submissionId);
    await settleTicks();
    await h.runtime.close();
    await expect(waiting).rejects.toMatchObject({ code: "runtime_closed" });
    await expect(h.runtime.wait(submissionId)).rejects.toMatchObject({ code: "runtime_closed" });
  });
});
