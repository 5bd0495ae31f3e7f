import { contentText, type Message } from "@earendil-works/pi-ai";
import { describe, expect, it } from "vitest";
import type { ConversationRecord, ConversationRecordOf } from "../../src/protocol/records.ts";
import type { AgentDefinition } from "../../src/agent/agent-definition.ts";
import type { HarnessEvent } from "../../src/ports/observer.ts";
import type { AgentSetup } from "../../src/agent/agent-setup.ts";
import { clockTool } from "../../src/agent/clock-tool.ts";
import { localModel } from "../../src/agent/local-model.ts";
import { scriptedModel, type ScriptStep } from "../../src/agent/scripted-model.ts";
import { allRecords, startTestServer, type TestServer } from "../support/runtime-kit.ts";

const OVERFLOW = "400 prompt is too long: 250000 tokens > 200000 maximum";
const ADDRESS = { agent: "assistant", instance: "w1" } as const;

/** The text a provider was sent, all messages joined. */
function sentText(messages: readonly Message[]): string {
  return messages
    .map((m) => (m.role === "assistant" ? contentText(m.content.filter((c) => c.type === "text")) : typeof m.content === "string" ? m.content : contentText(m.content)))
    .join("\n");
}

/** A scripted model with a context window of `windowChars` characters: a longer request overflows. */
function windowStep(windowChars: number): ScriptStep {
  return (messages) => (sentText(messages).length > windowChars ? [{ error: OVERFLOW }] : [{ text: `ok ${messages.length}` }]);
}

/** An agent over `steps`, summarizing with the keyless local model (deterministic, incremental). */
function agentOf(steps: ScriptStep[], extra: Partial<AgentSetup> = {}) {
  const scripted = scriptedModel(steps);
  const summarizer = localModel();
  const definition: AgentDefinition = {
    initialize: () => ({
      model: scripted.model,
      streamFn: scripted.streamFn,
      compaction: { keepRecentTokens: 150, model: summarizer.model, streamFn: summarizer.streamFn },
      ...extra,
    }),
  };
  return { definition, scripted };
}

async function run(h: TestServer, body: string) {
  const { submissionId, conversationId } = await h.runtime.dispatch({ ...ADDRESS, message: { kind: "user", body } });
  return { submissionId, conversationId, payload: await h.runtime.wait(submissionId) };
}

const compactions = (records: ConversationRecord[]) => records.filter((r): r is ConversationRecordOf<"compaction"> => r.kind === "compaction");
const q = (n: number) => `question ${n} ${"x".repeat(340)}`;

describe("compaction in the drive (embedded)", () => {
  it("an overflow mid-run compacts, retries the turn and succeeds; the settlement carries the usage", async () => {
    const { definition, scripted } = agentOf([
      [{ text: "a1" }],
      [{ text: "a2" }],
      [{ text: "a3" }],
      [{ error: OVERFLOW }],
      [{ text: "fits now" }],
    ]);
    const h = await startTestServer({ agents: { assistant: definition } });
    for (const n of [1, 2, 3]) expect((await run(h, q(n))).payload.status).toBe("succeeded");
    const last = await run(h, q(4));
    expect(last.payload).toMatchObject({ status: "succeeded", usage: { input: expect.any(Number), output: expect.any(Number) } });

    const records = await allRecords(h.store, last.conversationId);
    const [compaction] = compactions(records);
    expect(compaction).toMatchObject({ submissionId: last.submissionId, payload: { reason: "overflow", startIdx: 0 } });
    // Kept: the last exchange before the input, and the input (keepRecentTokens 150 ≈ 525 chars).
    const kept = records.find((r) => r.id === compaction!.payload.firstKeptEntryId)!;
    expect(kept).toMatchObject({ kind: "user_message", payload: { body: q(3) } });
    // The retried turn saw the summary instead of the first two exchanges.
    const retried = sentText(scripted.calls[4]!.messages);
    expect(retried).toContain("<summary>");
    expect(retried).toContain("[user] question 1");
    expect(retried).not.toContain(q(1));
    expect(retried).toContain(q(3));
    expect(retried).toContain(q(4));

    const mine = h.events.filter((e) => e.correlation.submissionId === last.submissionId);
    expect(mine.map((e) => e.type)).toEqual(expect.arrayContaining(["recovery", "compaction"]));
    expect(mine.find((e) => e.type === "recovery")).toMatchObject({ decision: "overflow_compact_retry" });
    expect(mine.find((e) => e.type === "compaction")).toMatchObject({
      reason: "overflow",
      firstKeptEntryId: kept.id,
      summarizedTokens: expect.any(Number),
      keptTokens: expect.any(Number),
    });
    const operations = mine.filter((e): e is Extract<HarnessEvent, { type: "operation_started" }> => e.type === "operation_started");
    expect(operations.map((e) => e.operation)).toEqual(["prompt", "compact", "prompt"]);
    await h.runtime.close();
  });

  it("a third overflow fails with the spec's message and context_overflow; the two summaries are incremental", async () => {
    const { definition } = agentOf([[{ text: "a1" }], [{ text: "a2" }], [{ text: "a3" }], [{ error: OVERFLOW }], [{ error: OVERFLOW }], [{ error: OVERFLOW }]]);
    const h = await startTestServer({ agents: { assistant: definition } });
    for (const n of [1, 2, 3]) await run(h, q(n));
    const last = await run(h, q(4));
    expect(last.payload).toMatchObject({
      status: "failed",
      errorCode: "context_overflow",
      error: `context overflow persisted after 2 compactions: ${OVERFLOW}`,
      excludedFromContext: true,
    });
    const [first, second] = compactions(await allRecords(h.store, last.conversationId));
    expect(second!.payload.summary.startsWith(first!.payload.summary)).toBe(true);
    expect(second!.payload.summary).toContain("[user] question 3");
    expect(first!.payload.summary).not.toContain("[user] question 3");
    await h.runtime.close();
  });

  it("an input that alone cannot fit settles context_overflow, stays in the log, and the next submission succeeds without it", async () => {
    const { definition, scripted } = agentOf(Array.from({ length: 10 }, () => windowStep(2_000)));
    const h = await startTestServer({ agents: { assistant: definition } });
    expect((await run(h, "hello")).payload.status).toBe("succeeded");
    const huge = `HUGE ${"y".repeat(5_000)}`;
    const failed = await run(h, huge);
    expect(failed.payload).toMatchObject({ status: "failed", errorCode: "context_overflow", excludedFromContext: true });
    expect(failed.payload.error).toMatch(/^context overflow/);
    const next = await run(h, "and now?");
    expect(next.payload.status).toBe("succeeded");
    expect(sentText(scripted.calls.at(-1)!.messages)).not.toContain("HUGE");
    expect(sentText(scripted.calls.at(-1)!.messages)).toContain("and now?");
    const records = await allRecords(h.store, next.conversationId);
    expect(records.some((r) => r.kind === "user_message" && r.payload.body === huge)).toBe(true);
    await h.runtime.close();
  });

  it("a follow-up accepted while a manual compaction runs: the compaction settles (no endless re-run) and the follow-up is in the log after it", { timeout: 20_000 }, async () => {
    const { definition } = agentOf([[{ text: "a1" }], [{ text: "a2" }], [{ text: "a3" }]]);
    let h!: TestServer;
    let accepted = false;
    h = await startTestServer({
      agents: { assistant: definition },
      interceptors: [
        async (info, next) => {
          if (info.kind === "operation" && info.operation === "compact" && !accepted) {
            // The session's in-flight run is the compaction: the inbox takes the message.
            await h.runtime.followUp({ ...ADDRESS, body: "and one more thing" });
            accepted = true;
          }
          await next();
        },
      ],
    });
    for (const n of [1, 2, 3]) expect((await run(h, q(n))).payload.status).toBe("succeeded");
    const { submissionId, conversationId } = await h.runtime.compact(ADDRESS);
    const settled = await Promise.race([h.runtime.wait(submissionId), new Promise((r) => setTimeout(() => r("still running"), 10_000))]);
    expect(accepted).toBe(true);
    expect(settled).toMatchObject({ status: "succeeded", result: { compacted: true } });
    const mine = (await allRecords(h.store, conversationId)).filter((r) => r.submissionId === submissionId);
    expect(mine.map((r) => r.kind)).toEqual(["compaction", "user_message", "submission_settled"]);
    expect(mine[1]!.payload).toMatchObject({ body: "and one more thing", origin: "followUp" });
    expect((await h.store.getSubmission(submissionId)).attemptCount).toBe(1);
    await h.runtime.close();
  });

  it("a context past contextWindow − reserveTokens is compacted before the model call (reason threshold)", async () => {
    const { definition, scripted } = agentOf([[{ text: "a1" }], [{ text: "a2" }], [{ text: "a3" }]]);
    const h = await startTestServer({ agents: { assistant: definition } });
    await run(h, q(1));
    await run(h, q(2));
    // Now the window is small: the next input (~200 tokens) after the last reply passes 400 − 250
    // (the scripted replies report a usage, so pi-ai's estimate starts from the last one).
    const small: AgentDefinition = {
      initialize: async (ctx) => {
        const setup = await definition.initialize(ctx);
        return { ...setup, model: { ...setup.model, contextWindow: 400 }, compaction: { ...setup.compaction, reserveTokens: 250 } };
      },
    };
    await h.runtime.close();
    await h.restart({ agents: { assistant: small } });
    const third = await run(h, `question 3 ${"z".repeat(700)}`);
    expect(third.payload.status).toBe("succeeded");
    const [compaction] = compactions(await allRecords(h.store, third.conversationId));
    expect(compaction!.payload.reason).toBe("threshold");
    expect(sentText(scripted.calls[2]!.messages)).toContain("<summary>");
    expect(h.events.find((e) => e.type === "compaction")).toMatchObject({ reason: "threshold" });
    await h.runtime.close();
  });
});

describe("usage on every settlement", () => {
  it("counts every attempt's tokens, a failed one's included, also when the budget is spent before a drive", async () => {
    // Attempt 1 completes a tool-call turn (billed), then its next turn fails transiently; so does
    // attempt 2; the third claim finds the budget spent and settles without a drive.
    const scripted = scriptedModel([[{ text: "let me look" }, { toolCall: { id: "c1", name: "clock", arguments: {} } }], [{ error: "503 service unavailable" }], [{ error: "503 service unavailable" }]]);
    const definition: AgentDefinition = { initialize: () => ({ model: scripted.model, streamFn: scripted.streamFn, tools: [clockTool()], maxAttempts: 2 }) };
    const h = await startTestServer({ agents: { assistant: definition } });
    const { submissionId } = await h.runtime.dispatch({ ...ADDRESS, message: { kind: "user", body: "time?" } });
    const waiting = h.runtime.wait(submissionId);
    for (let i = 0; i < 10; i++) await h.clock.advance(5_000);
    const payload = await waiting;
    expect(payload).toMatchObject({ status: "failed", errorCode: "attempt_budget_exhausted" });
    // Attempt 1's completed tool-call turn was billed (the scripted model counts one output token per delta).
    expect(payload.usage!.output).toBeGreaterThan(0);
    await h.runtime.close();
  });
});

