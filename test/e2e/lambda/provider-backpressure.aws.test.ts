/**
 * Provider backpressure in the serverless shape, on the local cloud (the real handlers against
 * DynamoDB Local and fauxqs): a 429 with `Retry-After` makes the worker release the submission
 * with a not-before time and end its invocation; the doorbell's own message comes back when its
 * visibility runs out (no new ring, no sleeping invocation), and the next claim charges no attempt.
 */
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedProvider, type ScriptedProvider } from "../../support/scripted-provider.ts";
import { useLocalCloud } from "../../support/local-cloud-suite.ts";

const agentsModule = fileURLToPath(new URL("../../support/local-cloud-fixtures/provider-agents.ts", import.meta.url));
let provider: ScriptedProvider;

// Started first: the local cloud's options name its URL.
beforeAll(async () => {
  provider = await startScriptedProvider();
});
afterAll(async () => {
  await provider?.close();
});

const suite = useLocalCloud(() => ({
  agentsModule,
  workers: 1,
  workerTimeoutMs: 10_000,
  queueVisibilityTimeoutMs: 30_000,
  sweeperRateMs: false,
  env: { HARNESS_LEASE_MS: "2000", SCRIPTED_PROVIDER_URL: provider.url },
}));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("provider backpressure on the local cloud", () => {
  it("a 429 with Retry-After: the worker releases and returns, the message's visibility brings the retry, no attempt charged", async () => {
    suite.dumpLogsOnFailure();
    provider.script({ status: 429, headers: { "retry-after": "3" } }, [{ text: "Rate limit passed." }]);
    const instance = `bp-${randomUUID().slice(0, 8)}`;
    const res = await fetch(`${suite.cloud.url}/agents/remote/${instance}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ kind: "user", body: "hello" }),
    });
    expect(res.status).toBe(202);
    const { submissionId } = (await res.json()) as { submissionId: string };

    // The first request is refused; the invocation then ends instead of sleeping out the wait.
    for (let i = 0; i < 100 && provider.requests.length === 0; i++) await sleep(50);
    expect(provider.requests).toHaveLength(1);
    await sleep(1_500);
    expect(suite.cloud.workers.map((w) => w.busy), "no invocation is held during the wait").toEqual([false]);
    const waiting = await suite.store.getSubmission(submissionId);
    expect(waiting).toMatchObject({ status: "queued", pendingResume: true });
    expect(waiting.notBefore! - provider.requests[0]!.at).toBeGreaterThanOrEqual(2_900);
    // Why it waits, for any viewer (ADR 0053): the row's reason in the view the http function
    // answers, and the record in the log.
    const view = (await (await fetch(`${suite.cloud.url}/agents/remote/${instance}/submissions/${submissionId}`)).json()) as { retry?: unknown };
    expect(view.retry).toEqual({ reason: "rate_limited", status: 429, error: waiting.lastError, nextAttemptAt: waiting.notBefore });
    const records = await suite.store.readRecords(waiting.conversationId);
    expect(records.filter((r) => r.kind === "submission_retrying").map((r) => r.payload)).toMatchObject([
      { reason: "rate_limited", status: 429, nextAttemptAt: new Date(waiting.notBefore!).toISOString(), attemptCount: 1 },
    ]);

    let settled = await suite.store.getSubmission(submissionId);
    for (let i = 0; i < 200 && settled.status !== "settled"; i++) {
      await sleep(100);
      settled = await suite.store.getSubmission(submissionId);
    }
    expect(settled.outcome).toMatchObject({ status: "succeeded" });
    expect(settled.attemptCount, "backpressure charges no attempt").toBe(1);
    expect(provider.requests).toHaveLength(2);
    expect(provider.requests[1]!.at - provider.requests[0]!.at).toBeGreaterThanOrEqual(3_000);

    // One message did it all: delivered again when its visibility ran out, not rung anew.
    const deliveries = suite.cloud.deliveries.filter((d) => d.queue === "work" && d.body.includes(submissionId));
    expect(deliveries.map((d) => d.receiveCount)).toEqual([1, 2]);
    expect(new Set(deliveries.map((d) => d.messageId)).size).toBe(1);
    expect(deliveries[1]!.at - provider.requests[0]!.at).toBeGreaterThanOrEqual(2_900);
  });
});
