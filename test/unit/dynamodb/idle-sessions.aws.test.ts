/**
 * Conversation retention on DynamoDB (`conversationRetentionMs`, ADR 0034), against DynamoDB
 * Local and fauxqs S3: a session is listed idle from the settlement that leaves nothing of it
 * unsettled (the `idle` bucket of the byStatus index on its session item) until its next
 * admission; the sweep deletes a conversation idle past the retention (its submissions and the
 * image only it referenced) and keeps one as old but active since; a subagent's session is never
 * listed; the listing pages by the previous page's last conversation.
 */
import { type DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scriptedModel } from "../../../src/agent/scripted-model.ts";
import { newId } from "../../../src/conversation/ids.ts";
import { sessionPk } from "../../../src/dynamodb/keys.ts";
import { systemClock, type Clock } from "../../../src/ports/clock.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import type { Store } from "../../../src/store/store.ts";
import type { SessionKey } from "../../../src/store/submission.ts";
import { pngOfSize } from "../../support/attachment-fixtures.ts";
import { createDynamoStore } from "../../../src/dynamodb/index.ts";
import { BUCKET, ensureBucket, freshStore, testClients } from "../../support/dynamodb-fixtures.ts";
import { heldSendsClient, transaction } from "../../support/held-sends.ts";
import { STRANDED_GRACE_MS } from "../../../src/dynamodb/session-order.ts";

const HOUR = 3_600_000;
const clients = testClients();

describe("conversation retention on DynamoDB", () => {
  let made: Awaited<ReturnType<typeof freshStore>>;
  let store: Store;
  let runtime: Runtime;
  /** The wall clock moved forward by `shift` (records, idle stamps and the sweep read this clock). */
  let shift = 0;
  const clock: Clock = { now: () => Date.now() + shift, sleep: (ms, signal) => systemClock.sleep(ms, signal) };
  const key = (instance: string): SessionKey => ({ agent: "chat", instance, session: "default" });
  const owned: DynamoDBClient[] = [];
  /** A store of another process, whose sends the test holds or kills. */
  const other = () => {
    const c = heldSendsClient();
    owned.push(c.dynamo);
    return { ...c, store: createDynamoStore({ tableName: made.tableName, bucketName: BUCKET, dynamo: c.dynamo, s3: clients.s3, clock }) };
  };
  const isListedIdle = async (conversationId: string) =>
    (await store.listIdleConversations!({ idleSince: clock.now() + 1, limit: 1_000 })).some((c) => c.id === conversationId);
  const delayedIn = async (instance: string) => {
    const { conversation } = await store.ensureConversation({ id: newId(clock.now()), key: key(instance), createdAt: clock.now() });
    return (
      await store.admitSubmission({ id: newId(clock.now()), conversationId: conversation.id, sessionKey: key(instance), input: { kind: "user", body: "later" }, createdAt: clock.now(), delayedUntil: clock.now() + HOUR })
    ).submission;
  };
  const sessionItem = async (instance: string) =>
    (await clients.dynamo.send(new GetItemCommand({ TableName: made.tableName, Key: { pk: { S: sessionPk(key(instance)) }, sk: { S: "SESSION" } }, ConsistentRead: true }))).Item;

  beforeAll(async () => {
    await ensureBucket(clients.s3);
    made = await freshStore(clients, clock, { idleSessions: true });
    store = made.store;
    const model = scriptedModel(Array.from({ length: 20 }, () => [{ text: "ok" }]));
    runtime = createRuntime({
      agents: { chat: { initialize: () => ({ model: model.model, streamFn: model.streamFn }) } },
      store,
      clock,
      conversationRetentionMs: 3 * HOUR,
      flushPolicy: { bytes: 0, intervalMs: 0 },
      onObserverError: () => {},
    });
    await runtime.start();
  });
  afterAll(async () => {
    for (const dynamo of owned) dynamo.destroy();
    await runtime.close();
    await made.dispose();
    clients.dynamo.destroy();
    clients.s3.destroy();
  });

  const say = async (instance: string, body: string, attachments?: { digest: string; mediaType: string; size: number }[]) => {
    const { submissionId, conversationId } = await runtime.dispatch({ agent: "chat", instance, message: { kind: "user", body, ...(attachments ? { attachments } : {}) } });
    expect((await runtime.wait(submissionId)).status).toBe("succeeded");
    return { submissionId, conversationId };
  };

  it("lists a session idle from its last settlement until its next admission", async () => {
    await say("stamp", "hello");
    expect((await sessionItem("stamp"))?.byStatusPk?.S, "idle once nothing is unsettled").toBe("idle#0");
    const { conversation } = await store.ensureConversation({ id: newId(clock.now()), key: key("stamp"), createdAt: clock.now() });
    const queued = (await store.admitSubmission({ id: newId(clock.now()), conversationId: conversation.id, sessionKey: key("stamp"), input: { kind: "user", body: "again" }, createdAt: clock.now() })).submission;
    expect((await sessionItem("stamp"))?.byStatusPk, "the admission's reservation clears it").toBeUndefined();
    expect((await runtime.wait(queued.id)).status).toBe("succeeded");
    expect((await sessionItem("stamp"))?.byStatusPk?.S).toBe("idle#0");
  });

  it("never lists a subagent's session: it goes with its parent's", async () => {
    const parent = await say("parent", "hello");
    const child = key("parent-child");
    const { conversation } = await store.ensureConversation({ id: newId(clock.now()), key: child, createdAt: clock.now() });
    const sub = (await store.admitSubmission({
      id: newId(clock.now()),
      conversationId: conversation.id,
      sessionKey: child,
      input: { kind: "user", body: "a task" },
      createdAt: clock.now(),
      parentSubmissionId: parent.submissionId,
      parentCallId: "call_1",
      depth: 1,
    })).submission;
    const claimed = await store.claimSubmission({ submissionId: sub.id, attemptId: newId(clock.now()), ownerId: "o", leaseExpiresAt: clock.now() + 30_000 });
    await store.reserveSettlement(sub.id, claimed.attemptId!);
    await store.finalizeSettlement(sub.id);
    expect((await sessionItem("parent-child"))?.byStatusPk, "a child's settlement stamps nothing").toBeUndefined();
    await store.deleteConversation(child);
    await store.deleteConversation(key("parent"));
  });

  it("deletes a conversation idle past the retention and keeps one active since, however old", async () => {
    const image = await runtime.uploadAttachment({ contentType: "image/png", data: pngOfSize(1_000, Math.floor(Math.random() * 1e6)) });
    const idle = await say("idle", "hello", [image]);
    const active = await say("active", "hello");
    shift += 2 * HOUR;
    await say("active", "still here");
    shift += 2 * HOUR; // idle: 4 h since its last activity; active: 2 h (stamp: 4 h too)

    const report = await runtime.sweep();
    expect(report.expiredConversations, "idle and stamp expire; active stays").toBe(2);
    await expect(store.getConversation(key("idle"))).rejects.toMatchObject({ code: "conversation_not_found" });
    expect(await store.readRecords(idle.conversationId)).toEqual([]);
    await expect(store.getSubmission(idle.submissionId)).rejects.toMatchObject({ code: "submission_not_found" });
    await expect(store.getAttachmentRef(image.digest)).rejects.toMatchObject({ code: "attachment_not_found" });
    expect((await store.getConversation(key("active"))).id).toBe(active.conversationId);
    expect((await runtime.sweep()).expiredConversations).toBe(0);

    shift += 2 * HOUR; // active: 4 h since its last activity
    expect((await runtime.sweep()).expiredConversations).toBe(1);
    await expect(store.getConversation(key("active"))).rejects.toMatchObject({ code: "conversation_not_found" });
  });

  it("costs nothing unless asked for: a store without idleSessions stamps nothing and cannot serve a retention", async () => {
    const plain = createDynamoStore({ tableName: made.tableName, bucketName: BUCKET, dynamo: clients.dynamo, s3: clients.s3, clock });
    expect(plain.listIdleConversations).toBeUndefined();
    expect(() => createRuntime({ agents: { chat: { initialize: () => ({}) as never } }, store: plain, conversationRetentionMs: HOUR })).toThrow(/idleSessions: true/);
    const k = key("unstamped");
    const { conversation } = await plain.ensureConversation({ id: newId(clock.now()), key: k, createdAt: clock.now() });
    const sub = (await plain.admitSubmission({ id: newId(clock.now()), conversationId: conversation.id, sessionKey: k, input: { kind: "user", body: "hi" }, createdAt: clock.now() })).submission;
    const claimed = await plain.claimSubmission({ submissionId: sub.id, attemptId: newId(clock.now()), ownerId: "o", leaseExpiresAt: clock.now() + 30_000 });
    await plain.reserveSettlement(sub.id, claimed.attemptId!);
    await plain.finalizeSettlement(sub.id);
    expect((await sessionItem("unstamped"))?.byStatusPk).toBeUndefined();
    await plain.deleteConversation(k);
  });

  it("pages by the previous page's last conversation, oldest idle first", async () => {
    for (const instance of ["page-a", "page-b", "page-c"]) {
      await say(instance, "hello");
      shift += 1_000;
    }
    const idleSince = clock.now();
    const seen: string[] = [];
    for (let after: string | undefined; ; ) {
      const page = await store.listIdleConversations!({ idleSince, limit: 1, ...(after ? { after } : {}) });
      if (page.length === 0) break;
      seen.push(page[0]!.key.instance);
      after = page[0]!.id;
    }
    expect(seen).toEqual(["page-a", "page-b", "page-c"]);
  });

  // Issue 33 point 3: every path that leaves a session with nothing unsettled lists it idle.
  describe("a session left with nothing unsettled is listed idle, and expires", () => {
    it("once its delayed message is cancelled", async () => {
      const delayed = await delayedIn("delayed-cancelled");
      expect(await isListedIdle(delayed.conversationId), "a delayed message waits: not idle").toBe(false);
      await store.cancelSubmission(delayed.id, { errorCode: "cancelled", error: "cancelled: not needed" });
      expect(await isListedIdle(delayed.conversationId)).toBe(true);
      shift += 4 * HOUR;
      await runtime.sweep();
      await expect(store.getConversation(key("delayed-cancelled"))).rejects.toMatchObject({ code: "conversation_not_found" });
    });

    it("once a cancel wins over its delayed message's join (the join's number is never written)", async () => {
      const delayed = await delayedIn("join-lost");
      const sweeper = other();
      const joinTx = sweeper.hold(transaction);
      const joining = sweeper.store.joinSessionOrder(delayed.id);
      await joinTx.reached; // the join reserved its number
      await store.cancelSubmission(delayed.id, { errorCode: "cancelled", error: "cancelled: not needed" });
      joinTx.release();
      await expect(joining, "the join lost").rejects.toMatchObject({ code: "claim_lost" });
      shift += STRANDED_GRACE_MS + 1;
      expect(await isListedIdle(delayed.conversationId)).toBe(true);
      shift += 4 * HOUR;
      await runtime.sweep();
      await expect(store.getConversation(key("join-lost"))).rejects.toMatchObject({ code: "conversation_not_found" });
    });

    it("when an admitter dies right after reserving its number in an idle session (listed once it is surely gone)", async () => {
      const { conversationId } = await say("reserved-died", "hello");
      const admitter = other();
      const died = admitter.die(transaction);
      void admitter.store.admitSubmission({ id: newId(clock.now()), conversationId, sessionKey: key("reserved-died"), input: { kind: "user", body: "lost" }, createdAt: clock.now() });
      await died; // its number is reserved; nothing else of it is ever written
      expect(await isListedIdle(conversationId), "an admission on its way is not listed").toBe(false);
      shift += STRANDED_GRACE_MS + 1;
      expect(await isListedIdle(conversationId)).toBe(true);
      shift += 4 * HOUR;
      await runtime.sweep();
      await expect(store.getConversation(key("reserved-died"))).rejects.toMatchObject({ code: "conversation_not_found" });
    });
  });
});
