/**
 * Provider backpressure in the serverless shape, on the local cloud (the real handlers against
 * DynamoDB Local and fauxqs): a 429 with `Retry-After` makes the worker release the submission
 * with a not-before time and end its invocation; the doorbell's own message comes back when its
 * visibility runs out (no new ring, no sleeping invocation), and the next claim charges no attempt.
 */
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import { startLocalCloud, type LocalCloud } from "../../dev/local-cloud/local-cloud.ts";
import type { Store } from "../../src/ports/store.ts";
import { createDynamoStore } from "../../src/stores/dynamodb/index.ts";
import { startScriptedProvider, type ScriptedProvider } from "../support/scripted-provider.ts";

const agentsModule = fileURLToPath(new URL("./fixtures/provider-agents.ts", import.meta.url));
const logs: string[] = [];
let cloud: LocalCloud;
let store: Store;
let provider: ScriptedProvider;

beforeAll(async () => {
  provider = await startScriptedProvider();
  cloud = await startLocalCloud({
    agentsModule,
    workers: 1,
    workerTimeoutMs: 10_000,
    queueVisibilityTimeoutMs: 30_000,
    sweeperRateMs: false,
    env: { HARNESS_LEASE_MS: "2000", SCRIPTED_PROVIDER_URL: provider.url },
    log: (line, source) => logs.push(`[${source}] ${line}`),
    onError: (err, source) => logs.push(`[event-source ${source}] ${String(err)}`),
  });
  store = createDynamoStore({ tableName: cloud.tableName, bucketName: cloud.bucketName });
}, 180_000);

afterAll(async () => {
  await cloud?.stop();
  await provider?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("provider backpressure on the local cloud", () => {
  it("a 429 with Retry-After: the worker releases and returns, the message's visibility brings the retry, no attempt charged", async () => {
    onTestFailed(() => {
      process.stderr.write(`--- local cloud output ---\n${logs.slice(-100).join("\n")}\n`);
    });
    provider.script({ status: 429, headers: { "retry-after": "3" } }, [{ text: "Rate limit passed." }]);
    const instance = `bp-${randomUUID().slice(0, 8)}`;
    const res = await fetch(`${cloud.url}/agents/remote/${instance}`, {
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
    expect(cloud.workers.map((w) => w.busy), "no invocation is held during the wait").toEqual([false]);
    const waiting = await store.getSubmission(submissionId);
    expect(waiting).toMatchObject({ status: "queued", pendingResume: true });
    expect(waiting.notBefore! - provider.requests[0]!.at).toBeGreaterThanOrEqual(2_900);

    let settled = await store.getSubmission(submissionId);
    for (let i = 0; i < 200 && settled.status !== "settled"; i++) {
      await sleep(100);
      settled = await store.getSubmission(submissionId);
    }
    expect(settled.outcome).toMatchObject({ status: "succeeded" });
    expect(settled.attemptCount, "backpressure charges no attempt").toBe(1);
    expect(provider.requests).toHaveLength(2);
    expect(provider.requests[1]!.at - provider.requests[0]!.at).toBeGreaterThanOrEqual(3_000);

    // One message did it all: delivered again when its visibility ran out, not rung anew.
    const deliveries = cloud.deliveries.filter((d) => d.queue === "work" && d.body.includes(submissionId));
    expect(deliveries.map((d) => d.receiveCount)).toEqual([1, 2]);
    expect(new Set(deliveries.map((d) => d.messageId)).size).toBe(1);
    expect(deliveries[1]!.at - provider.requests[0]!.at).toBeGreaterThanOrEqual(2_900);
  });
});
