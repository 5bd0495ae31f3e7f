/**
 * What the DynamoDB store must do beyond the shared contract, against DynamoDB Local and fauxqs
 * S3: the table it declares, S3 spill of large payloads, chunked big batches, SDK retries of
 * throttling, recognition of its own writes after a lost response, tailing and racing across
 * store instances (as separate Lambdas would), and no table scans.
 */
import { type AddressInfo, createServer, type Socket } from "node:net";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import { GetObjectCommand } from "@aws-sdk/client-s3";
import {
  DescribeTableCommand,
  type DynamoDBClient,
  GetItemCommand,
  QueryCommand,
} from "@aws-sdk/client-dynamodb";
import { describe, expect, it } from "vitest";
import { newId } from "../../../src/conversation/ids.ts";
import type { ConversationRecord, RecordDraft } from "../../../src/protocol/records.ts";
import { ManualClock } from "../../../src/ports/clock.ts";
import type { Store } from "../../../src/store/store.ts";
import type { SessionKey, Submission } from "../../../src/store/submission.ts";
import { cancellation, textOfBytes } from "../../../src/store/conformance/index.ts";
import { createDynamoClient, createDynamoStore, createS3Client, HARNESS_TABLE } from "../../../src/dynamodb/index.ts";
import { DYNAMO_REQUEST_TIMEOUT_MS } from "../../../src/dynamodb/clients.ts";
import { itemBytes } from "../../../src/dynamodb/item.ts";
import { batchEntries } from "../../../src/dynamodb/log-batch.ts";
import { BUCKET, freshStore, useTestClients } from "../../support/dynamodb-fixtures.ts";

const clients = useTestClients();

/** A fresh table and store per test, plus helpers to seed it. */
async function setup(extra: { dynamo?: DynamoDBClient; spillThresholdBytes?: number } = {}) {
  const clock = new ManualClock();
  const made = await freshStore({ dynamo: extra.dynamo ?? clients.dynamo, s3: clients.s3 }, clock, {
    ...(extra.spillThresholdBytes ? { spillThresholdBytes: extra.spillThresholdBytes } : {}),
  });
  const store = made.store;
  /** Another store instance on the same table: a second Lambda. */
  const sibling = (): Store =>
    createDynamoStore({ tableName: made.tableName, bucketName: BUCKET, dynamo: clients.dynamo, s3: clients.s3, clock });
  let n = 0;
  const key = (): SessionKey => ({ agent: "agent", instance: `i-${++n}`, session: "default" });
  const admit = async (k: SessionKey = key(), body = "hello"): Promise<Submission> => {
    const { conversation } = await store.ensureConversation({ id: newId(clock.now()), key: k, createdAt: clock.now() });
    clock.set(clock.now() + 1);
    return (await store.admitSubmission({ id: newId(clock.now()), conversationId: conversation.id, sessionKey: k, input: { kind: "user", body }, createdAt: clock.now() })).submission;
  };
  const claim = (sub: { id: string }, s: Store = store) =>
    s.claimSubmission({ submissionId: sub.id, attemptId: newId(clock.now()), ownerId: "o", leaseExpiresAt: clock.now() + 30_000 });
  const draft = (conversationId: string, text: string): RecordDraft => ({
    kind: "assistant_text_delta",
    conversationId,
    session: "default",
    time: new Date(clock.now()).toISOString(),
    payload: { text },
  });
  const rawItem = async (pk: string, sk: string) =>
    (await clients.dynamo.send(new GetItemCommand({ TableName: made.tableName, Key: { pk: { S: pk }, sk: { S: sk } }, ConsistentRead: true }))).Item;
  /** The batch items of a conversation's log, in order. */
  const batchItems = async (conversationId: string) =>
    (
      await clients.dynamo.send(
        new QueryCommand({
          TableName: made.tableName,
          KeyConditionExpression: "pk = :pk",
          ExpressionAttributeValues: { ":pk": { S: `CONV#${conversationId}` } },
          ConsistentRead: true,
        }),
      )
    ).Items ?? [];
  /** How a record is kept in its batch item: its payload inline, or the S3 ref of a spilled one. */
  const storedEntry = async (conversationId: string, id: string) =>
    (await batchItems(conversationId)).flatMap((item) => batchEntries(item)).find((e) => e.rest.id === id);
  return { ...made, store, clock, sibling, key, admit, claim, draft, rawItem, batchItems, storedEntry };
}

/** A client of its own whose sends of `commands` fail as `fail` says (inside the SDK's retry loop). */
function faultyClient(
  commands: string[],
  fail: (attempt: number) => "throttle" | "provisioned" | "lose-response" | undefined,
): { dynamo: DynamoDBClient; sends: Map<string, number> } {
  const dynamo = createDynamoClient({}, { baseDelayMs: 2, throttlingBaseDelayMs: 5 });
  const sends = new Map<string, number>();
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName ?? "";
      const attempt = (sends.get(name) ?? 0) + 1;
      sends.set(name, attempt);
      const mode = commands.includes(name) ? fail(attempt) : undefined;
      if (mode === "throttle" || mode === "provisioned") {
        const error = new Error("Rate of requests exceeds the allowed throughput.");
        error.name = mode === "throttle" ? "ThrottlingException" : "ProvisionedThroughputExceededException";
        throw Object.assign(error, { $fault: "client", $metadata: { httpStatusCode: 400 } });
      }
      const result = await next(args);
      if (mode === "lose-response") {
        // The request reached DynamoDB and was applied; the caller only sees the socket die.
        throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET", $metadata: {} });
      }
      return result;
    },
    { step: "deserialize", priority: "high", name: "faultInjector" },
  );
  return { dynamo, sends };
}

describe("table", () => {
  it("is created with exactly the keys and sparse KEYS_ONLY indexes of HARNESS_TABLE", async () => {
    const t = await setup();
    const { Table } = await clients.dynamo.send(new DescribeTableCommand({ TableName: t.tableName }));
    expect(Table?.KeySchema).toEqual([
      { AttributeName: "pk", KeyType: "HASH" },
      { AttributeName: "sk", KeyType: "RANGE" },
    ]);
    expect(Table?.BillingModeSummary?.BillingMode).toBe("PAY_PER_REQUEST");
    const indexes = (Table?.GlobalSecondaryIndexes ?? []).map((g) => ({
      name: g.IndexName,
      keys: g.KeySchema?.map((k) => `${k.AttributeName}:${k.KeyType}`),
      projection: g.Projection?.ProjectionType,
    }));
    expect(indexes.sort((a, b) => a.name!.localeCompare(b.name!))).toEqual(
      Object.values(HARNESS_TABLE.indexes)
        .map((i) => ({ name: i.indexName, keys: [`${i.partitionKey}:HASH`, `${i.sortKey}:RANGE`], projection: "KEYS_ONLY" }))
        .sort((a, b) => a.name.localeCompare(b.name)),
    );
    await t.dispose();
  });
});

describe("spill to S3", () => {
  it("stores a 1 MiB tool output in S3, keeps a reference in the item and restores it on read", async () => {
    const t = await setup();
    const sub = await t.claim(await t.admit());
    const big = textOfBytes(1024 * 1024);
    const [rec] = await t.store.appendRecords(
      sub.conversationId,
      [{ kind: "tool_outcome", conversationId: sub.conversationId, session: "default", time: "2026-01-01T00:00:00.000Z", payload: { callId: "c", toolName: "dump", content: [{ type: "text", text: big }] } }],
      { fence: { submissionId: sub.id, attemptId: sub.attemptId! } },
    );
    const entry = await t.storedEntry(sub.conversationId, rec!.id);
    expect(entry, "the record is in a batch item").toBeDefined();
    expect(entry?.payload, "no inline payload").toBeUndefined();
    const digest = entry?.payloadRef;
    expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const blob = await t.store.getAttachment(digest!);
    expect(JSON.parse(Buffer.from(blob.data).toString("utf8")).content[0].text === big, "the S3 object is the payload").toBe(true);
    const [read] = await t.store.readRecords(sub.conversationId, "");
    expect((read!.payload as { content: { text: string }[] }).content[0]!.text === big, "read restores it").toBe(true);
    await t.dispose();
  });

  it("keeps small payloads inline and spills a large input and a large steer", async () => {
    const t = await setup({ spillThresholdBytes: 1_000 });
    const sub = await t.claim(await t.admit(undefined, "x".repeat(5_000)));
    const input = await t.rawItem(`SUB#${sub.id}`, "IN");
    expect(input?.input, "large input not inline").toBeUndefined();
    expect(input?.inputRef?.S).toMatch(/^sha256:/);
    expect((await t.store.getSubmission(sub.id)).input.body).toBe("x".repeat(5_000));

    const [small] = await t.store.appendRecords(sub.conversationId, [t.draft(sub.conversationId, "tiny")]);
    expect(await t.storedEntry(sub.conversationId, small!.id)).toMatchObject({ payload: { text: "tiny" } });

    await t.store.enqueueInbox(sub.sessionKey, { kind: "steer", body: "s".repeat(3_000) });
    const [steer] = await t.store.drainInbox({ submissionId: sub.id, attemptId: sub.attemptId!, kinds: ["steer"] });
    expect(steer!.payload).toEqual({ body: "s".repeat(3_000), origin: "steer" });
    await t.dispose();
  });

  it("packs an append larger than one item into several items, in order, nothing spilled under the threshold", async () => {
    const t = await setup();
    const conv = (await t.admit()).conversationId;
    const drafts = Array.from({ length: 60 }, (_, i) => t.draft(conv, `${i}:`.padEnd(90_000, "p")));
    const stored = await t.store.appendRecords(conv, drafts);
    const log = await t.store.readRecords(conv, "");
    expect(log.map((r) => (r.payload as { text: string }).text)).toEqual(drafts.map((d) => (d.payload as { text: string }).text));
    expect(log.map((r) => r.id)).toEqual(stored.map((r) => r.id));
    const items = await t.batchItems(conv);
    expect(items.length, "5.4 MB of records need several items").toBeGreaterThan(10);
    for (const item of items) expect(itemBytes(item), "each item under DynamoDB's 400 KB").toBeLessThan(400_000);
    for (const r of stored) expect((await t.storedEntry(conv, r.id))?.payloadRef, "90 KB stays inline").toBeUndefined();
    await t.dispose();
  });
});

describe("big batches", () => {
  it("appends a batch larger than one transaction in order, in chained chunks", async () => {
    const t = await setup();
    const sub = await t.claim(await t.admit());
    const conv = sub.conversationId;
    await t.store.appendRecords(conv, [t.draft(conv, "before")]);
    const drafts = Array.from({ length: 250 }, (_, i) => t.draft(conv, `r${i}`));
    const stored = await t.store.appendRecords(conv, drafts, { fence: { submissionId: sub.id, attemptId: sub.attemptId! } });
    const log = await t.store.readRecords(conv, "");
    expect(log.slice(1).map((r) => r.id)).toEqual(stored.map((r) => r.id));
    expect(log.slice(1).map((r) => (r.payload as { text: string }).text)).toEqual(drafts.map((d) => (d.payload as { text: string }).text));
    for (let i = 1; i < log.length; i++) expect(log[i]!.id > log[i - 1]!.id).toBe(true);
    await t.dispose();
  });
});

describe("SDK retries", () => {
  it("survives throttling: the first sends fail with ThrottlingException / ProvisionedThroughputExceeded", async () => {
    for (const mode of ["throttle", "provisioned"] as const) {
      // Each operation below meets 3 throttled sends of its write before the real one.
      let budget = 0;
      const { dynamo, sends } = faultyClient(["UpdateItemCommand", "TransactWriteItemsCommand", "PutItemCommand"], () => (budget-- > 0 ? mode : undefined));
      const t = await setup({ dynamo });
      const k = t.key();
      const { conversation } = await t.store.ensureConversation({ id: newId(t.clock.now()), key: k, createdAt: t.clock.now() });
      const throttled = async <T>(what: string, command: string, op: () => Promise<T>): Promise<T> => {
        sends.clear();
        budget = 3;
        const out = await op();
        expect(sends.get(command), `${mode}: ${what} was sent 3 + 1 times`).toBe(4);
        return out;
      };
      // An admission first reserves its number (one UpdateItem, ADR 0035): that write meets the throttling.
      const { submission: sub } = await throttled("admission", "UpdateItemCommand", () =>
        t.store.admitSubmission({ id: "s1", conversationId: conversation.id, sessionKey: k, input: { kind: "user", body: "b" }, createdAt: 1 }),
      );
      const claimed = await throttled("the claim", "UpdateItemCommand", () => t.claim(sub));
      expect(claimed.status).toBe("running");
      expect(claimed.attemptCount).toBe(1);
      await throttled("the append", "PutItemCommand", () =>
        t.store.appendRecords(sub.conversationId, [t.draft(sub.conversationId, "a")], { fence: { submissionId: sub.id, attemptId: claimed.attemptId! } }),
      );
      expect((await t.store.readRecords(sub.conversationId, "")).length).toBe(1);
      await t.dispose();
      dynamo.destroy();
    }
  });

  it("never retries a refused condition blindly: a lost claim is one send", async () => {
    const { dynamo, sends } = faultyClient([], () => undefined);
    const t = await setup({ dynamo });
    const sub = await t.claim(await t.admit());
    sends.clear();
    await expect(t.claim(sub)).rejects.toMatchObject({ code: "claim_lost" });
    expect(sends.get("UpdateItemCommand")).toBe(1);
    await t.dispose();
    dynamo.destroy();
  });
});

describe("hung requests", () => {
  /** A peer that accepts connections and never answers; counts the requests it swallowed. */
  async function silentPeer(): Promise<{ url: string; requests: () => number; close: () => Promise<void> }> {
    let requests = 0;
    const sockets = new Set<Socket>();
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.once("data", () => requests++);
      socket.on("error", () => {});
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as AddressInfo;
    return {
      url: `http://127.0.0.1:${port}`,
      requests: () => requests,
      close: async () => {
        for (const socket of sockets) socket.destroy();
        await new Promise<void>((r) => server.close(() => r()));
      },
    };
  }
  const credentials = { accessKeyId: "test", secretAccessKey: "test" };

  it("the store's default clients fail a try that gets no response and retry it, instead of waiting forever", async () => {
    const peer = await silentPeer();
    // Two tries each, with the default per-try timeouts (DynamoDB) and a short one (S3's is long).
    const dynamo = createDynamoClient({ endpoint: peer.url, region: "us-east-1", credentials }, { maxAttempts: 2, baseDelayMs: 1 });
    const s3 = createS3Client({ endpoint: peer.url, region: "us-east-1", credentials }, { maxAttempts: 2, baseDelayMs: 1, requestTimeoutMs: 300 });
    try {
      const started = Date.now();
      const outcomes = await Promise.allSettled([
        dynamo.send(new GetItemCommand({ TableName: "t", Key: { pk: { S: "p" }, sk: { S: "s" } } })),
        s3.send(new GetObjectCommand({ Bucket: "b", Key: "k" })),
      ]);
      const elapsed = Date.now() - started;
      for (const o of outcomes) expect(o.status === "rejected" && (o.reason as Error).name, "a TimeoutError, not a hang").toBe("TimeoutError");
      expect(peer.requests(), "each try was retried once").toBe(4);
      expect(elapsed, "two tries of the default DynamoDB timeout").toBeLessThan(2 * DYNAMO_REQUEST_TIMEOUT_MS + 3_000);
    } finally {
      dynamo.destroy();
      s3.destroy();
      await peer.close();
    }
  });
});

describe("lost responses", () => {
  it("recognises its own claim, release, wait, resume, reserve and renew when the first response is lost", async () => {
    let lose = false;
    const { dynamo, sends } = faultyClient(["UpdateItemCommand", "TransactWriteItemsCommand"], (n) => (lose && n === 1 ? "lose-response" : undefined));
    const t = await setup({ dynamo });
    const step = async <T>(what: string, op: () => Promise<T>, command = "UpdateItemCommand"): Promise<T> => {
      sends.clear();
      lose = true;
      try {
        const out = await op();
        expect(sends.get(command), `${what}: sent twice (the SDK retried)`).toBe(2);
        return out;
      } finally {
        lose = false;
      }
    };
    const sub = await t.admit();
    const claimed = await step("claim", () => t.claim(sub));
    expect(claimed.status).toBe("running");
    expect(claimed.attemptCount, "the retry did not charge twice").toBe(1);
    await step("renew", () => t.store.renewLease({ submissionId: sub.id, attemptId: claimed.attemptId!, leaseExpiresAt: 1 }));
    await step("release", () => t.store.releaseSubmission({ submissionId: sub.id, attemptId: claimed.attemptId!, continuation: true }));
    expect((await t.store.getSubmission(sub.id)).status).toBe("queued");
    const again = await step("resume claim", () => t.claim(sub));
    expect(again.pendingResume, "the recognised claim still reports pendingResume").toBe(true);
    expect(again.attemptCount).toBe(1);
    // Wait and resume also flag the session item: one transaction, retried under its token.
    await step("wait", () => t.store.waitSubmission({ submissionId: sub.id, attemptId: again.attemptId! }), "TransactWriteItemsCommand");
    expect(await t.store.sessionLive(sub.sessionKey)).toBe(false);
    await step("resume", () => t.store.resumeSubmission(sub.id), "TransactWriteItemsCommand");
    expect(await t.store.sessionLive(sub.sessionKey)).toBe(true);
    const third = await t.claim(sub);
    await step("reserve", () => t.store.reserveSettlement(sub.id, third.attemptId!, { requireDrainedInbox: true }));
    expect((await t.store.getSubmission(sub.id)).status).toBe("terminalizing");
    await t.dispose();
    dynamo.destroy();
  });

  it("applies a write once when its first response is lost (admission, append, drain, finalize)", async () => {
    let lose = false;
    const { dynamo, sends } = faultyClient(["TransactWriteItemsCommand", "PutItemCommand"], (n) => (lose && n === 1 ? "lose-response" : undefined));
    const t = await setup({ dynamo });
    const lost = async <T>(command: string, op: () => Promise<T>): Promise<T> => {
      sends.clear();
      lose = true;
      try {
        const out = await op();
        expect(sends.get(command), `${command} sent twice (the SDK retried)`).toBe(2);
        return out;
      } finally {
        lose = false;
      }
    };
    const k = t.key();
    const sub = await lost("TransactWriteItemsCommand", () => t.admit(k));
    expect((await t.store.listByStatus("queued")).map((s) => s.id)).toEqual([sub.id]);
    const claimed = await t.claim(sub);
    // An append is one conditional put: the retry meets its own batch (its token) and succeeds.
    const [a] = await lost("PutItemCommand", () => t.store.appendRecords(sub.conversationId, [t.draft(sub.conversationId, "once")], { expectedHead: "" }));
    expect((await t.store.readRecords(sub.conversationId, "")).map((r) => r.id)).toEqual([a!.id]);
    const [b] = await lost("PutItemCommand", () =>
      t.store.appendRecords(sub.conversationId, [t.draft(sub.conversationId, "twice?")], { fence: { submissionId: sub.id, attemptId: claimed.attemptId! } }),
    );
    expect((await t.store.readRecords(sub.conversationId, "")).map((r) => r.id)).toEqual([a!.id, b!.id]);
    await t.store.enqueueInbox(k, { kind: "steer", body: "s" });
    const drained = await lost("TransactWriteItemsCommand", () => t.store.drainInbox({ submissionId: sub.id, attemptId: claimed.attemptId!, kinds: ["steer"] }));
    expect(drained.length).toBe(1);
    expect((await t.store.readRecords(sub.conversationId, "")).length).toBe(3);
    await t.store.reserveSettlement(sub.id, claimed.attemptId!, { requireDrainedInbox: true });
    await lost("TransactWriteItemsCommand", () => t.store.finalizeSettlement(sub.id));
    expect((await t.store.getSubmission(sub.id)).status).toBe("settled");
    expect(await t.store.getSessionHead(k)).toBeUndefined();
    await t.dispose();
    dynamo.destroy();
  });
});

/** A client whose PutItem sends wait at a gate: a writer paused between its checks and its put. */
function gatedPuts(): { dynamo: DynamoDBClient; paused: Promise<void>; open: () => void } {
  const dynamo = createDynamoClient();
  let reached!: () => void;
  let open!: () => void;
  const paused = new Promise<void>((r) => (reached = r));
  const gate = new Promise<void>((r) => (open = r));
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === "PutItemCommand") {
        reached();
        await gate;
      }
      return next(args);
    },
    { step: "initialize", name: "putGate" },
  );
  return { dynamo, paused, open };
}

describe("the fence against a writer that passed its check just before losing the claim", () => {
  /** A running submission and a fenced append of it (another instance) paused after its state check. */
  async function lateAppend() {
    const t = await setup();
    const sub = await t.claim(await t.admit());
    const conv = sub.conversationId;
    const gated = gatedPuts();
    const stale = createDynamoStore({ tableName: t.tableName, bucketName: BUCKET, dynamo: gated.dynamo, s3: clients.s3, clock: t.clock });
    const late = stale.appendRecords(conv, [t.draft(conv, "late")], { fence: { submissionId: sub.id, attemptId: sub.attemptId! } });
    await gated.paused; // its state check passed: it still owned the claim
    return { t, sub, conv, gated, late };
  }

  it("a re-claim's takeover marker refuses the previous attempt's late append", async () => {
    const { t, sub, conv, gated, late } = await lateAppend();
    // Meanwhile (another Lambda) the lease is reclaimed and the submission claimed again.
    await t.store.releaseSubmission({ submissionId: sub.id, attemptId: sub.attemptId! });
    const next = await t.claim(sub);
    gated.open();
    await expect(late, "the stale attempt's put follows the takeover marker").rejects.toMatchObject({ code: "claim_lost" });
    expect(await t.store.readRecords(conv, ""), "nothing of the stale attempt").toEqual([]);
    const [ok] = await t.store.appendRecords(conv, [t.draft(conv, "new owner")], { fence: { submissionId: sub.id, attemptId: next.attemptId! }, expectedHead: "" });
    expect((await t.store.readRecords(conv, "")).map((r) => r.id)).toEqual([ok!.id]);
    gated.dynamo.destroy();
    await t.dispose();
  });

  it("a settlement record refuses a late append of the attempt it settled", async () => {
    const { t, sub, conv, gated, late } = await lateAppend();
    const [settled] = await t.store.appendRecords(conv, [
      { kind: "submission_settled", conversationId: conv, session: "default", submissionId: sub.id, time: new Date(t.clock.now()).toISOString(), payload: { status: "failed", errorCode: "timeout_exceeded" } },
    ]);
    gated.open();
    await expect(late).rejects.toMatchObject({ code: "claim_lost" });
    expect((await t.store.readRecords(conv, "")).map((r) => r.id), "the settlement stays last").toEqual([settled!.id]);
    gated.dynamo.destroy();
    await t.dispose();
  });

  it("a cancel of a reclaimed (queued) submission refuses its old attempt's late append, so the next submission's log stays its own", async () => {
    const t = await setup();
    const k = t.key();
    const a = await t.claim(await t.admit(k));
    const b = await t.admit(k);
    const conv = a.conversationId;
    const gated = gatedPuts();
    const stale = createDynamoStore({ tableName: t.tableName, bucketName: BUCKET, dynamo: gated.dynamo, s3: clients.s3, clock: t.clock });
    const late = stale.appendRecords(conv, [t.draft(conv, "late")], { fence: { submissionId: a.id, attemptId: a.attemptId! } });
    await gated.paused;
    // The sweeper hands the expired lease back, the user cancels the queued submission (its
    // settlement finalized here without a record), and the next one is claimed for the first
    // time and reads the log.
    await t.store.releaseSubmission({ submissionId: a.id, attemptId: a.attemptId! });
    expect(await t.store.cancelSubmission(a.id, cancellation("cancelled"))).toEqual({ wasRunning: false });
    await t.store.finalizeSettlement(a.id);
    const next = await t.claim(b);
    const head = (await t.store.readRecords(conv, "")).at(-1)?.id ?? "";
    gated.open();
    await expect(late, "a settled submission's attempt appends nothing").rejects.toMatchObject({ code: "claim_lost" });
    const [own] = await t.store.appendRecords(conv, [t.draft(conv, "b")], { fence: { submissionId: b.id, attemptId: next.attemptId! }, expectedHead: head });
    expect((await t.store.readRecords(conv, "")).map((r) => r.id)).toEqual([own!.id]);
    gated.dynamo.destroy();
    await t.dispose();
  });

  it("an append that wins the race before the takeover is kept, and the new owner reads it", async () => {
    const t = await setup();
    const sub = await t.claim(await t.admit());
    const conv = sub.conversationId;
    const [early] = await t.store.appendRecords(conv, [t.draft(conv, "early")], { fence: { submissionId: sub.id, attemptId: sub.attemptId! } });
    await t.store.releaseSubmission({ submissionId: sub.id, attemptId: sub.attemptId! });
    const next = await t.claim(sub, t.sibling());
    // The marker mints an id of its own but is no record: readers and expected heads skip it.
    expect((await t.sibling().readRecords(conv, "")).map((r) => r.id)).toEqual([early!.id]);
    expect(await t.sibling().readRecords(conv, early!.id)).toEqual([]);
    const [after] = await t.sibling().appendRecords(conv, [t.draft(conv, "after")], {
      fence: { submissionId: sub.id, attemptId: next.attemptId! },
      expectedHead: early!.id,
    });
    expect((await t.sibling().readRecords(conv, "")).map((r) => r.id)).toEqual([early!.id, after!.id]);
    expect((await t.batchItems(conv)).length, "record, marker, record").toBe(3);
    await t.dispose();
  });
});

describe("reading from inside a batch", () => {
  it("a fresh instance reads on from any record id, a batch end or not", async () => {
    const t = await setup();
    const conv = (await t.admit()).conversationId;
    const a = await t.store.appendRecords(conv, ["a1", "a2", "a3"].map((x) => t.draft(conv, x)));
    const b = await t.store.appendRecords(conv, ["b1", "b2"].map((x) => t.draft(conv, x)));
    const all = [...a, ...b];
    for (let i = 0; i < all.length; i++) {
      // A new store per read: no cache of batch ends, as a new Lambda container.
      expect((await t.sibling().readRecords(conv, all[i]!.id)).map((r) => r.id), `after record ${i}`).toEqual(all.slice(i + 1).map((r) => r.id));
      expect((await t.sibling().readRecords(conv, all[i]!.id, 1)).map((r) => r.id), `one after record ${i}`).toEqual(all.slice(i + 1, i + 2).map((r) => r.id));
    }
    await t.dispose();
  });

  it("an afterId above every record id (not a ULID) reads nothing instead of failing the Query", async () => {
    const t = await setup();
    const conv = (await t.admit()).conversationId;
    await t.store.appendRecords(conv, [t.draft(conv, "a")]);
    for (const after of ["~", "~~", "zz", "\u00e9", "\u{1F600}"]) {
      expect(await t.sibling().readRecords(conv, after), `after ${JSON.stringify(after)}`).toEqual([]);
      expect(await t.sibling().readRecords(conv, after, 1), `one after ${JSON.stringify(after)}`).toEqual([]);
    }
    await t.dispose();
  });
});

describe("across store instances (separate Lambdas)", () => {
  it("a reader tailing from one instance sees every record exactly once while two others append", async () => {
    const t = await setup();
    const conv = (await t.admit()).conversationId;
    const [w1, w2, reader] = [t.sibling(), t.sibling(), t.sibling()];
    let writing = true;
    const write = async (s: Store, name: string) => {
      for (let i = 0; i < 25; i++) {
        await s.appendRecords(conv, Array.from({ length: 1 + (i % 4) }, (_, j) => t.draft(conv, `${name}${i}.${j}`)));
      }
    };
    const tail = async (limit?: number) => {
      const seen: ConversationRecord[] = [];
      let after = "";
      const poll = async () => {
        const got = await reader.readRecords(conv, after, limit);
        seen.push(...got);
        if (got.length > 0) after = got[got.length - 1]!.id;
        return got.length;
      };
      while (writing) {
        await poll();
        await yieldToLoop();
      }
      while ((await poll()) > 0);
      return seen;
    };
    const tails = [tail(), tail(3)];
    await Promise.all([write(w1, "A"), write(w2, "B")]);
    writing = false;
    const log = await t.store.readRecords(conv, "");
    expect(log.length).toBe(2 * (7 * 1 + 6 * 2 + 6 * 3 + 6 * 4));
    for (const seen of await Promise.all(tails)) expect(seen.map((r) => r.id)).toEqual(log.map((r) => r.id));
    // Each writer's batches are contiguous: no interleaving inside a batch.
    const texts = log.map((r) => (r.payload as { text: string }).text);
    for (const name of ["A", "B"]) {
      for (let i = 0; i < 25; i++) {
        const at = texts.indexOf(`${name}${i}.0`);
        expect(texts.slice(at, at + 1 + (i % 4))).toEqual(Array.from({ length: 1 + (i % 4) }, (_, j) => `${name}${i}.${j}`));
      }
    }
    await t.dispose();
  });

  it("an admission racing the settlement of the last open submission becomes the head", async () => {
    const t = await setup();
    const other = t.sibling();
    for (let round = 0; round < 8; round++) {
      const k = t.key();
      const first = await t.claim(await t.admit(k));
      await t.store.reserveSettlement(first.id, first.attemptId!);
      const conversationId = first.conversationId;
      const [{ submission: next }] = await Promise.all([
        other.admitSubmission({ id: `next-${round}-${newId(t.clock.now())}`, conversationId, sessionKey: k, input: { kind: "user", body: "n" }, createdAt: t.clock.now() }),
        t.store.finalizeSettlement(first.id),
      ]);
      expect((await t.store.getSessionHead(k))?.id, `round ${round}: the new admission is the head`).toBe(next.id);
      expect((await t.store.listRunnable()).map((s) => s.id)).toContain(next.id);
      expect((await t.claim(next, other)).status).toBe("running");
      await other.cancelSubmission(next.id, cancellation("done"));
    }
    await t.dispose();
  });

  it("cancels racing the settlement of the head never strand the session", async () => {
    const t = await setup();
    const other = t.sibling();
    const k = t.key();
    const subs: Submission[] = [];
    for (let i = 0; i < 6; i++) subs.push(await t.admit(k));
    const head = await t.claim(subs[0]!);
    await t.store.reserveSettlement(head.id, head.attemptId!);
    // Settle the head while another instance cancels the ones right behind it.
    await Promise.all([
      t.store.finalizeSettlement(head.id),
      other.cancelSubmission(subs[1]!.id, cancellation("x")),
      other.cancelSubmission(subs[2]!.id, cancellation("y")),
    ]);
    // Cancelled ones keep their place in line, settling; each one's finalize hands on.
    for (const cancelled of [subs[1]!, subs[2]!]) {
      const promoted = await t.store.getSessionHead(k);
      expect(promoted?.id).toBe(cancelled.id);
      expect(promoted?.status).toBe("terminalizing");
      await t.store.finalizeSettlement(cancelled.id);
    }
    expect((await t.store.getSessionHead(k))?.id).toBe(subs[3]!.id);
    expect((await t.store.listRunnable()).map((s) => s.id)).toEqual([subs[3]!.id]);
    await expect(t.claim(subs[4]!)).rejects.toMatchObject({ code: "claim_lost" });
    expect((await t.claim(subs[3]!)).status).toBe("running");
    await t.dispose();
  });
});

describe("turn-boundary drains", () => {
  it("an empty drain after this process's own append reads the state item only (no Query of the log)", async () => {
    const { dynamo, sends } = faultyClient([], () => undefined);
    const t = await setup({ dynamo });
    const sub = await t.claim(await t.admit());
    const fence = { submissionId: sub.id, attemptId: sub.attemptId! };
    const [head] = await t.store.appendRecords(sub.conversationId, [t.draft(sub.conversationId, "turn")], { fence });
    sends.clear();
    expect(await t.store.drainInbox({ ...fence, kinds: ["steer", "followUp"], expectedHead: head!.id })).toEqual([]);
    expect(Object.fromEntries(sends), "one GetItem of the state item").toEqual({ GetItemCommand: 1 });
    // A head other than the one it knows is checked against the log.
    const [elsewhere] = await t.sibling().appendRecords(sub.conversationId, [t.draft(sub.conversationId, "elsewhere")]);
    expect(await t.store.drainInbox({ ...fence, kinds: ["steer"], expectedHead: elsewhere!.id })).toEqual([]);
    await expect(t.store.drainInbox({ ...fence, kinds: ["steer"], expectedHead: head!.id })).rejects.toMatchObject({ code: "claim_lost" });
    await t.dispose();
    dynamo.destroy();
  });
});

describe("no scans", () => {
  it("serves every operation with Get, Query and writes: nothing scans the table", async () => {
    const { dynamo, sends } = faultyClient([], () => undefined);
    const t = await setup({ dynamo });
    const k = t.key();
    const sub = await t.claim(await t.admit(k));
    await t.admit(k);
    await t.store.appendRecords(sub.conversationId, [t.draft(sub.conversationId, "x")]);
    await t.store.readRecords(sub.conversationId, "", 5);
    await t.store.enqueueInbox(k, { kind: "steer", body: "s" });
    await t.store.drainInbox({ submissionId: sub.id, attemptId: sub.attemptId!, kinds: ["steer"] });
    await t.store.listRunnable();
    for (const s of ["queued", "running", "waiting", "terminalizing", "settled"] as const) await t.store.listByStatus(s);
    await t.store.listExpiredLeases(t.clock.now());
    await t.store.listDueWaits(t.clock.now());
    await t.store.postponeWaitCheck({ submissionId: sub.id, waitCheckAt: t.clock.now(), nextCheckAt: t.clock.now() + 1 });
    await t.store.listChildSubmissions(sub.id);
    await t.store.getSessionHead(k);
    await t.store.reserveSettlement(sub.id, sub.attemptId!, { requireDrainedInbox: true });
    await t.store.finalizeSettlement(sub.id);
    expect([...sends.keys()].sort()).not.toContain("ScanCommand");
    expect([...sends.keys()].sort()).not.toContain("BatchWriteItemCommand");
    await t.dispose();
    dynamo.destroy();
  });
});

describe("raw layout", () => {
  it("keeps the lease on a small state item apart from the input", async () => {
    const t = await setup();
    const sub = await t.claim(await t.admit(undefined, "b".repeat(50_000)));
    const res = await clients.dynamo.send(
      new QueryCommand({ TableName: t.tableName, KeyConditionExpression: "pk = :pk", ExpressionAttributeValues: { ":pk": { S: `SUB#${sub.id}` } }, ConsistentRead: true }),
    );
    const state = res.Items!.find((i) => i.sk!.S === "ST")!;
    const input = res.Items!.find((i) => i.sk!.S === "IN")!;
    expect(JSON.stringify(state).length, "the state item stays well under 1 KB").toBeLessThan(1_000);
    expect(JSON.stringify(input).length).toBeGreaterThan(50_000);
    expect(state.leaseExpiresAt?.N).toBe(String(sub.leaseExpiresAt));
    await t.dispose();
  });
});
