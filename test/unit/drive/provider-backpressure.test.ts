/**
 * Provider backpressure is not failure (issue 15): a 429 or 503 with `Retry-After` waits at least
 * that long before the next attempt, and rate limiting or an unreachable provider count against
 * the submission's time budget, not its attempt budget. Against a scripted provider on the real
 * wire (pi-ai's OpenAI-compatible and Anthropic streaming APIs), in the embedded shape.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HarnessEvent } from "../../../src/ports/observer.ts";
import type { Store } from "../../../src/store/store.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { createApp } from "../../../src/http/app.ts";
import { startScriptedProvider, type ProviderApi, type ScriptedProvider } from "../../support/scripted-provider.ts";

let provider: ScriptedProvider;
beforeAll(async () => {
  provider = await startScriptedProvider();
});
afterAll(() => provider.close());

describe.each<ProviderApi>(["openai-completions", "anthropic-messages"])("provider backpressure on the %s wire", (api) => {
  let runtime: Runtime;
  let store: Store;
  const events: HarnessEvent[] = [];
  beforeAll(async () => {
    store = createMemoryStore();
    runtime = createRuntime({
      store,
      observers: [(e) => events.push(e)],
      agents: {
        // One attempt only: any charged retry would settle attempt_budget_exhausted.
        strict: { initialize: () => ({ ...provider.model(api), maxAttempts: 1 }) },
        twice: { initialize: () => ({ ...provider.model(api), maxAttempts: 2 }) },
        brief: { initialize: () => ({ ...provider.model(api), submissionTimeoutMs: 5_000 }) },
      },
    });
    await runtime.start();
  });
  afterAll(() => runtime.close());

  const run = async (agent: string, instance: string, body: string) => {
    const { submissionId } = await runtime.dispatch({ agent, instance, message: { kind: "user", body } });
    return { submissionId, outcome: await runtime.wait(submissionId) };
  };

  it("429s with Retry-After (seconds, then retry-after-ms): each wait is at least that long, then it succeeds, no attempt charged", async () => {
    const first = provider.requests.length;
    provider.script(
      { status: 429, headers: { "retry-after": "1" } },
      { status: 429, headers: { "retry-after-ms": "1200" } },
      [{ text: "Here you go." }],
    );
    const { submissionId, outcome } = await run("strict", `${api}-429`, "hello");
    expect(outcome).toMatchObject({ status: "succeeded" });
    const times = provider.requests.slice(first).map((r) => r.at);
    expect(times).toHaveLength(3);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(1_000);
    expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(1_200);
    const sub = await store.getSubmission(submissionId);
    expect(sub.attemptCount, "backpressure charges no attempt").toBe(1);
    const decisions = events.filter((e) => e.type === "recovery" && e.correlation.submissionId === submissionId);
    expect(decisions.map((e) => (e as { decision: string }).decision)).toEqual(["provider_backpressure", "provider_backpressure"]);
  });

  it("a 503 without a hint, then success: retried after at least a second, no attempt charged", async () => {
    const first = provider.requests.length;
    provider.script({ status: 503 }, [{ text: "Back." }]);
    const { submissionId, outcome } = await run("strict", `${api}-503`, "hello");
    expect(outcome).toMatchObject({ status: "succeeded" });
    const [a, b] = provider.requests.slice(first).map((r) => r.at);
    expect(b! - a!).toBeGreaterThanOrEqual(1_000);
    expect((await store.getSubmission(submissionId)).attemptCount).toBe(1);
  });

  it("a provider down (connection refused) longer than the attempt budget would allow: succeeds within the time budget", async () => {
    await provider.down();
    const { submissionId } = await runtime.dispatch({ agent: "twice", instance: `${api}-down`, message: { kind: "user", body: "are you up?" } });
    // Two attempts with the transient backoff would be spent in well under a second.
    await new Promise((r) => setTimeout(r, 2_500));
    const first = provider.requests.length;
    provider.script([{ text: "Up now." }]);
    await provider.up();
    const outcome = await runtime.wait(submissionId);
    expect(outcome).toMatchObject({ status: "succeeded" });
    expect(provider.requests.length - first, "one request once it is up").toBe(1);
    expect((await store.getSubmission(submissionId)).attemptCount).toBe(1);
    const detail = events.find((e) => e.type === "recovery" && e.correlation.submissionId === submissionId);
    expect(detail).toMatchObject({ decision: "provider_backpressure", detail: expect.stringMatching(/^unreachable/) });
  });

  it("while it waits out a 429, its view says why and when it tries next, and its log has a submission_retrying record (ADR 0053)", async () => {
    provider.script({ status: 429, headers: { "retry-after": "2" } }, [{ text: "Now." }]);
    const instance = `${api}-why`;
    const { submissionId } = await runtime.dispatch({ agent: "strict", instance, message: { kind: "user", body: "hello" } });
    let view = await runtime.submission({ agent: "strict", instance, submissionId });
    while (view.retry === undefined && view.status !== "settled") {
      await new Promise((r) => setTimeout(r, 20));
      view = await runtime.submission({ agent: "strict", instance, submissionId });
    }
    expect(view.status).toBe("queued");
    expect(view.retry).toMatchObject({ reason: "rate_limited", status: 429, error: expect.stringContaining("429") });
    expect(view.retry!.nextAttemptAt!, "the next try is the provider's 2 s after the failed one").toBeGreaterThanOrEqual(view.createdAt + 2_000);
    expect(view.lastError).toBe(view.retry!.error);
    const records = await store.readRecords(view.conversationId);
    const retrying = records.filter((r) => r.kind === "submission_retrying");
    expect(retrying).toHaveLength(1);
    expect(retrying[0]).toMatchObject({
      submissionId,
      payload: { reason: "rate_limited", status: 429, nextAttemptAt: new Date(view.retry!.nextAttemptAt!).toISOString(), attemptCount: 1, maxAttempts: 1 },
    });

    expect(await runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    const settled = await runtime.submission({ agent: "strict", instance, submissionId });
    expect(settled.retry, "a settled submission retries no more").toBeUndefined();
  });

  it("a ?wait=true that stops waiting while the provider rate limits answers 202 with the status and why (ADR 0053)", async () => {
    provider.script({ status: 429, headers: { "retry-after": "6" } }, [{ text: "Now." }]);
    const instance = `${api}-wait`;
    const app = createApp(runtime, { maxRequestWaitMs: 3_000 });
    const res = await app.request(`/agents/strict/${instance}?wait=true`, { method: "POST", body: JSON.stringify({ kind: "user", body: "hello" }) });
    expect(res.status).toBe(202);
    const answer = (await res.json()) as { submissionId: string; status: string; retry?: { reason: string; status?: number; nextAttemptAt?: number } };
    expect(answer).toMatchObject({ status: "queued", retry: { reason: "rate_limited", status: 429 } });
    expect(await runtime.wait(answer.submissionId)).toMatchObject({ status: "succeeded" });
  });

  it("a 401 (a bad key) fails at once, saying the provider refused the key, without a retry (ADR 0053)", async () => {
    const first = provider.requests.length;
    provider.script({ status: 401 });
    const { submissionId, outcome } = await run("twice", `${api}-401`, "hello");
    expect(outcome).toMatchObject({ status: "failed", errorCode: "run_failed" });
    expect(outcome.error).toMatch(/^the model provider refused the API key \(HTTP 401\)/);
    expect(provider.requests.length - first, "asked once").toBe(1);
    expect((await store.getSubmission(submissionId)).attemptCount).toBe(1);
  });

  it("a Retry-After past the time budget settles timeout_exceeded at once, naming the provider's error", async () => {
    const first = provider.requests.length;
    provider.script({ status: 429, headers: { "retry-after": "40" } });
    const started = Date.now();
    const { outcome } = await run("brief", `${api}-long`, "hello");
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(outcome).toMatchObject({ status: "failed", errorCode: "timeout_exceeded" });
    expect(outcome.error).toMatch(/provider asked to wait 40s/);
    expect(outcome.error).toContain("429");
    expect(provider.requests.length - first).toBe(1);
  });
});
