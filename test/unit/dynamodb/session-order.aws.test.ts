/**
 * A session's order on DynamoDB (ADR 0035), against DynamoDB Local: admissions reserve their
 * number with an atomic counter, so a hot session admits every one of many concurrent
 * admissions; a number reserved by an admitter that died is skipped by whoever finds the head
 * pointer waiting at it, and never holds the session.
 */
import { GetItemCommand, QueryCommand, TransactionCanceledException, UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { describe, expect, it } from "vitest";
import { newId } from "../../../src/conversation/ids.ts";
import { ManualClock } from "../../../src/ports/clock.ts";
import type { Store } from "../../../src/store/store.ts";
import type { SessionKey, Submission } from "../../../src/store/submission.ts";
import { createDynamoClient, createDynamoStore } from "../../../src/dynamodb/index.ts";
import { isTransientStoreError } from "../../../src/errors.ts";
import { sessionPk } from "../../../src/dynamodb/keys.ts";
import { BUCKET, freshStore, useTestClients } from "../../support/dynamodb-fixtures.ts";

const clients = useTestClients();

async function setup() {
  const clock = new ManualClock();
  const made = await freshStore(clients, clock);
  /** Store instances on one table, as many http functions would be. */
  const stores: Store[] = [made.store, ...Array.from({ length: 4 }, () => createDynamoStore({ tableName: made.tableName, bucketName: BUCKET, dynamo: clients.dynamo, s3: clients.s3, clock }))];
  const key = (instance: string): SessionKey => ({ agent: "agent", instance, session: "default" });
  let n = 0;
  const admit = async (k: SessionKey, store: Store = made.store): Promise<Submission> => {
    const { conversation } = await store.ensureConversation({ id: newId(clock.now()), key: k, createdAt: clock.now() });
    return (await store.admitSubmission({ id: newId(clock.now() + ++n), conversationId: conversation.id, sessionKey: k, input: { kind: "user", body: `m${n}` }, createdAt: clock.now() })).submission;
  };
  /** Runs the session's head to its settlement, as a worker would (claim, reserve, finalize). */
  const settleHead = async (k: SessionKey): Promise<string | undefined> => {
    const head = await made.store.getSessionHead(k);
    if (!head) return undefined;
    const claimed = await made.store.claimSubmission({ submissionId: head.id, attemptId: newId(clock.now()), ownerId: "o", leaseExpiresAt: clock.now() + 30_000 });
    await made.store.reserveSettlement(head.id, claimed.attemptId!);
    await made.store.finalizeSettlement(head.id);
    return head.id;
  };
  const sessionItem = async (k: SessionKey) =>
    (await clients.dynamo.send(new GetItemCommand({ TableName: made.tableName, Key: { pk: { S: sessionPk(k) }, sk: { S: "SESSION" } }, ConsistentRead: true }))).Item;
  const members = async (k: SessionKey) =>
    (
      await clients.dynamo.send(
        new QueryCommand({
          TableName: made.tableName,
          KeyConditionExpression: "pk = :pk AND begins_with(sk, :q)",
          ExpressionAttributeValues: { ":pk": { S: sessionPk(k) }, ":q": { S: "Q#" } },
          ConsistentRead: true,
        }),
      )
    ).Items ?? [];
  /** What an admitter that died right after reserving its number leaves: the counter moved, nothing written. */
  const reserveAndDie = (k: SessionKey) =>
    clients.dynamo.send(
      new UpdateItemCommand({
        TableName: made.tableName,
        Key: { pk: { S: sessionPk(k) }, sk: { S: "SESSION" } },
        UpdateExpression: "ADD admitSeq :one",
        ExpressionAttributeValues: { ":one": { N: "1" } },
      }),
    );
  return { ...made, stores, key, admit, settleHead, sessionItem, members, reserveAndDie };
}

describe("a hot session", () => {
  for (const shape of ["behind a head", "into a new session"] as const) {
    it(`admits all of 100 concurrent admissions ${shape}, and runs them one at a time in admission order (behind a head: the first ten)`, async () => {
      const t = await setup();
      const k = t.key(`hot-${shape.length}`);
      const first = shape === "behind a head" ? await t.admit(k) : undefined;
      const admitted = await Promise.allSettled(Array.from({ length: 100 }, (_, i) => t.admit(k, t.stores[i % t.stores.length])));
      const refused = admitted.filter((r) => r.status === "rejected").map((r) => String((r as PromiseRejectedResult).reason));
      expect(refused, "no admission is refused").toEqual([]);

      const listed = await t.store.listSessionSubmissions(k, { limit: 200 });
      expect(listed.length).toBe(first ? 101 : 100);
      // The listing is newest first: each head in turn must be the oldest left. Into a new session
      // (the head pointer raced by everyone) all of them run; behind a head the first ten do.
      const order = listed.map((s) => s.id).reverse();
      const ran: string[] = [];
      const runs = first ? 10 : order.length;
      for (let id = await t.settleHead(k); id !== undefined && ran.push(id) < runs; id = await t.settleHead(k));
      expect(ran, "every admission becomes the head once, in admission order").toEqual(order.slice(0, runs));
      if (!first) {
        const session = await t.sessionItem(k);
        expect(session?.headId, "an idle session has no head").toBeUndefined();
        expect(Number(session?.headSeq?.N), "the pointer rests one past the last number").toBe(Number(session?.admitSeq?.N) + 1);
      }
      await t.dispose();
    }, 120_000);
  }
});

describe("a number reserved by an admitter that died", () => {
  it("is skipped by the next admission when the pointer waits at it (an idle session)", async () => {
    const t = await setup();
    const k = t.key("gap-idle");
    await t.settleHead(k);
    const before = await t.admit(k);
    expect(await t.settleHead(k)).toBe(before.id);
    await t.reserveAndDie(k);
    expect((await t.sessionItem(k))?.headId, "the pointer waits at the reserved number").toBeUndefined();

    const next = await t.admit(k);
    expect((await t.store.getSessionHead(k))?.id, "the next admission is the head").toBe(next.id);
    const skipped = (await t.members(k)).filter((m) => m.skipped?.BOOL);
    expect(skipped.map((m) => Number(m.seq?.N))).toEqual([2]);
    expect((await t.store.listSessionSubmissions(k, { limit: 10 })).map((s) => s.id), "the listing names no skipped number").toEqual([next.id, before.id]);
    await t.dispose();
  });

  it("is skipped by the settlement that moves the head past it", async () => {
    const t = await setup();
    const k = t.key("gap-behind");
    const head = await t.admit(k);
    await t.reserveAndDie(k);
    const behind = await t.admit(k);
    expect(await t.settleHead(k)).toBe(head.id);
    expect((await t.store.getSessionHead(k))?.id, "the head moves over the gap").toBe(behind.id);
    expect(await t.settleHead(k)).toBe(behind.id);
    expect(await t.settleHead(k)).toBeUndefined();
    await t.dispose();
  });

  it("does not keep a deletion waiting, nor an idle session busy", async () => {
    const t = await setup();
    const k = t.key("gap-delete");
    await t.admit(k);
    await t.settleHead(k);
    await t.reserveAndDie(k);
    const report = await t.store.deleteConversation!(k);
    expect(report.deleted, "the gap is skipped, the session deleted").toBe(true);
    expect(await t.sessionItem(k)).toBeUndefined();
    await t.dispose();
  });

  it("does not fail a deletion whose move off the gap stays raced for one look's tries (issue 33): the deletion re-runs it, and past its budget answers contended", async () => {
    const t = await setup();
    /** A deleter whose next `conflicts` transactions DynamoDB cancels for a transaction in flight on the same items. */
    const deleter = (conflicts: number) => {
      const dynamo = createDynamoClient({}, { baseDelayMs: 5, throttlingBaseDelayMs: 10 });
      let left = conflicts;
      dynamo.middlewareStack.add(
        (next, context) => async (args) => {
          if (context.commandName === "TransactWriteItemsCommand" && left-- > 0) {
            const items = (args.input as { TransactItems: unknown[] }).TransactItems;
            throw new TransactionCanceledException({
              message: "Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]",
              $metadata: {},
              CancellationReasons: items.map(() => ({ Code: "TransactionConflict" })),
            });
          }
          return next(args);
        },
        { step: "initialize", name: "conflicts" },
      );
      return { dynamo, store: createDynamoStore({ tableName: t.tableName, bucketName: BUCKET, dynamo, s3: clients.s3, clock: new ManualClock() }) };
    };
    const k = t.key("gap-delete-raced");
    await t.admit(k);
    await t.settleHead(k);
    await t.reserveAndDie(k);
    // One look at the pointer tries 12 moves: a deletion that gave up with it answered a bare retry error (a 500).
    const raced = deleter(12);
    expect((await raced.store.deleteConversation!(k)).deleted, "the move is re-run from a fresh read").toBe(true);
    expect(await t.sessionItem(k)).toBeUndefined();

    const k2 = t.key("gap-delete-contended");
    await t.admit(k2);
    await t.settleHead(k2);
    await t.reserveAndDie(k2);
    const contended = deleter(Number.POSITIVE_INFINITY);
    const refusal = await contended.store.deleteConversation!(k2).then(() => undefined, (e: unknown) => e);
    expect(refusal, "contended through every re-run: a transient store error (503), not a 500").toMatchObject({ name: "DynamoStoreContended" });
    expect(isTransientStoreError(refusal)).toBe(true);
    expect((await t.sessionItem(k2))?.deleting, "nothing deleted").toBeUndefined();
    raced.dynamo.destroy();
    contended.dynamo.destroy();
    await t.dispose();
  }, 60_000);
});
