/**
 * A session's order on DynamoDB (ADR 0035, issue 33 point 2), against DynamoDB Local: an
 * admitter (or the sweeper joining a delayed message) that writes its member behind a head
 * pointer waiting at a gap, and dies before its own look at the pointer, leaves a queued
 * submission that no claim accepts. The interleavings are forced through each store's SDK client:
 * a send held until the test releases it, and a send that never goes (the process died there).
 * Each case then shows the submission runs: after a retry of its dispatch (a replay), and by the
 * sweep alone, nobody retrying.
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scriptedModel } from "../../../src/agent/scripted-model.ts";
import { newId } from "../../../src/conversation/ids.ts";
import { createDynamoStore } from "../../../src/dynamodb/index.ts";
import { STRANDED_GRACE_MS } from "../../../src/dynamodb/session-order.ts";
import { systemClock, type Clock } from "../../../src/ports/clock.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import type { Store } from "../../../src/store/store.ts";
import type { SessionKey, Submission } from "../../../src/store/submission.ts";
import { BUCKET, ensureBucket, freshStore, testClients } from "../../support/dynamodb-fixtures.ts";
import { heldSendsClient, sessionRead, transaction } from "../../support/held-sends.ts";

const clients = testClients();

/** A store on a client of its own whose sends the test holds or kills (`held-sends.ts`). */
function controlled(made: { tableName: string }, clock: Clock) {
  const c = heldSendsClient();
  return { ...c, store: createDynamoStore({ tableName: made.tableName, bucketName: BUCKET, dynamo: c.dynamo, s3: clients.s3, clock }) };
}

describe("a queued submission behind a head pointer left at a gap", () => {
  let made: Awaited<ReturnType<typeof freshStore>>;
  let store: Store;
  /** The healthy process: runs attempts and sweeps when told. */
  let runtime: Runtime;
  let shift = 0;
  const clock: Clock = { now: () => Date.now() + shift, sleep: (ms, signal) => systemClock.sleep(ms, signal) };
  const owned: DynamoDBClient[] = [];
  const key = (instance: string): SessionKey => ({ agent: "chat", instance, session: "default" });
  const message = (body: string) => ({ kind: "user" as const, body });

  beforeAll(async () => {
    await ensureBucket(clients.s3);
    made = await freshStore(clients, clock);
    store = made.store;
    const model = scriptedModel(Array.from({ length: 20 }, () => [{ text: "ok" }]));
    runtime = createRuntime({
      agents: { chat: { initialize: () => ({ model: model.model, streamFn: model.streamFn }) } },
      store,
      clock,
      // No sweep but the ones a test asks for: the interleavings are the test's.
      sweepIntervalMs: 10 * 3_600_000,
      flushPolicy: { bytes: 0, intervalMs: 0 },
      onObserverError: () => {},
    });
    await runtime.start();
  });
  afterAll(async () => {
    await runtime.close();
    await made.dispose();
    for (const dynamo of owned) dynamo.destroy();
    clients.dynamo.destroy();
    clients.s3.destroy();
  });

  /** Another process (an http function) over its own controlled client, which runs no attempts. */
  const other = () => {
    const c = controlled(made, clock);
    owned.push(c.dynamo);
    const front = createRuntime({ agents: { chat: { initialize: () => ({}) as never } }, store: c.store, clock, onObserverError: () => {} });
    return { ...c, runtime: front };
  };

  /** A head of `k`, claimed and its settlement reserved: the finalize is what moves the pointer. */
  const settlingHead = async (k: SessionKey): Promise<Submission> => {
    const { conversation } = await store.ensureConversation({ id: newId(clock.now()), key: k, createdAt: clock.now() });
    const head = (await store.admitSubmission({ id: newId(clock.now()), conversationId: conversation.id, sessionKey: k, input: message("first"), createdAt: clock.now() })).submission;
    const claimed = await store.claimSubmission({ submissionId: head.id, attemptId: newId(clock.now()), ownerId: "o", leaseExpiresAt: clock.now() + 30_000 });
    await store.reserveSettlement(head.id, claimed.attemptId!);
    return head;
  };

  /**
   * Strands a dispatch of `k` the way issue 33 found it: the head's settlement reads the session,
   * the admission reserves the next number, the settlement moves the pointer onto that number
   * (nobody written there yet), the admission writes its member (not the head) and dies before
   * its look at the pointer.
   */
  const afterTheMemberWrite = async (k: SessionKey, dispatchId: string) => {
    const head = await settlingHead(k);
    const settler = other();
    const admitter = other();
    const settlerTx = settler.hold(transaction);
    const settling = settler.store.finalizeSettlement(head.id);
    await settlerTx.reached; // it read the session and the members after its head
    const admitterTx = admitter.hold(transaction);
    void admitter.runtime.dispatch({ agent: "chat", instance: k.instance, dispatchId, message: message("stranded") });
    await admitterTx.reached; // its number is reserved, behind the settling head
    settlerTx.release();
    await settling;
    const died = admitter.die(sessionRead);
    admitterTx.release();
    await died;
  };

  /**
   * An admitter reserves a number in an idle session and dies; the next one writes its member
   * behind the pointer waiting at that gap and dies before its look at the pointer.
   */
  const afterTheReservation = async (k: SessionKey, dispatchId: string) => {
    const head = await settlingHead(k);
    await store.finalizeSettlement(head.id);
    const first = other();
    const diedReserved = first.die(transaction);
    void first.runtime.dispatch({ agent: "chat", instance: k.instance, message: message("never written") });
    await diedReserved;
    const second = other();
    const diedWritten = second.die(sessionRead);
    void second.runtime.dispatch({ agent: "chat", instance: k.instance, dispatchId, message: message("stranded") });
    await diedWritten;
  };

  /** The sweeper joins a delayed message while the head's settlement moves the pointer, and dies after the join. */
  const inTheJoin = async (k: SessionKey): Promise<string> => {
    const head = await settlingHead(k);
    const delayed = (
      await store.admitSubmission({ id: newId(clock.now()), conversationId: head.conversationId, sessionKey: k, input: message("later"), createdAt: clock.now(), delayedUntil: clock.now() + 3_600_000 })
    ).submission;
    const settler = other();
    const sweeper = other();
    const settlerTx = settler.hold(transaction);
    const settling = settler.store.finalizeSettlement(head.id);
    await settlerTx.reached;
    const joinTx = sweeper.hold(transaction);
    void sweeper.store.joinSessionOrder(delayed.id);
    await joinTx.reached; // the join reserved its new number, behind the settling head
    settlerTx.release();
    await settling;
    const died = sweeper.die(sessionRead);
    joinTx.release();
    await died;
    return delayed.id;
  };

  /** What every stranded case looks like before anyone looks: queued, not the head, and the head pointer names nobody. */
  const expectStranded = async (k: SessionKey, id: string) => {
    expect((await store.getSubmission(id)).status).toBe("queued");
    expect(await store.getSessionHead(k), "the pointer waits at a number and names no head").toBeUndefined();
    await expect(
      store.claimSubmission({ submissionId: id, attemptId: newId(clock.now()), ownerId: "o", leaseExpiresAt: clock.now() + 30_000 }),
      "a claim refuses it: not the head",
    ).rejects.toMatchObject({ code: "claim_lost" });
  };

  const runsAfterTheSweep = async (k: SessionKey, id: string) => {
    shift += STRANDED_GRACE_MS + 1; // its admitter is gone for good
    const report = await runtime.sweep();
    expect((await store.getSessionHead(k))?.id, "the sweep moved the pointer onto it").toBe(id);
    expect(report.rerung, "and rang it").toBeGreaterThanOrEqual(1);
    expect((await runtime.wait(id)).status).toBe("succeeded");
  };

  const runsAfterAReplay = async (k: SessionKey, id: string) => {
    const again = await runtime.dispatch({ agent: "chat", instance: k.instance, dispatchId: id, message: message("stranded") });
    expect(again).toMatchObject({ submissionId: id, replayed: true });
    expect((await store.getSessionHead(k))?.id, "the replay moved the pointer onto it").toBe(id);
    expect((await runtime.wait(id)).status).toBe("succeeded");
  };

  for (const [point, strand] of [
    ["after its member write, before its look at the pointer (the settlement moved the pointer onto its number)", afterTheMemberWrite],
    ["after the reservation before it (that admitter died too)", afterTheReservation],
  ] as const) {
    it(`an admitter that dies ${point} is run after a retry of its dispatch`, async () => {
      const k = key(newId(clock.now()));
      const id = newId(clock.now());
      await strand(k, id);
      await expectStranded(k, id);
      await runsAfterAReplay(k, id);
    });

    it(`an admitter that dies ${point} is run by the sweep alone`, async () => {
      const k = key(newId(clock.now()));
      const id = newId(clock.now());
      await strand(k, id);
      await expectStranded(k, id);
      await runsAfterTheSweep(k, id);
    });
  }

  it("a delayed message whose join's sweeper died before its look at the pointer is run by the next sweep", async () => {
    const k = key(newId(clock.now()));
    const id = await inTheJoin(k);
    await expectStranded(k, id);
    await runsAfterTheSweep(k, id);
  });

  it("the sweep leaves a queued submission behind a live head alone", async () => {
    const k = key(newId(clock.now()));
    const { conversation } = await store.ensureConversation({ id: newId(clock.now()), key: k, createdAt: clock.now() });
    const admit = async (body: string) =>
      (await store.admitSubmission({ id: newId(clock.now()), conversationId: conversation.id, sessionKey: k, input: message(body), createdAt: clock.now() })).submission;
    const head = await admit("first");
    const claimed = await store.claimSubmission({ submissionId: head.id, attemptId: newId(clock.now()), ownerId: "o", leaseExpiresAt: clock.now() + 60_000 });
    const behind = await admit("behind");
    shift += STRANDED_GRACE_MS + 1;
    await runtime.sweep();
    expect((await store.getSessionHead(k))?.id, "the head stays the head").toBe(head.id);
    expect((await store.getSubmission(behind.id)).status).toBe("queued");
    await store.reserveSettlement(head.id, claimed.attemptId!);
    await store.finalizeSettlement(head.id);
    expect((await store.getSessionHead(k))?.id).toBe(behind.id);
  });
});
