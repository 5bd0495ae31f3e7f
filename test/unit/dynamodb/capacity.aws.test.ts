/**
 * Consumed capacity of each engine operation on the DynamoDB store, measured against DynamoDB
 * Local with `countConsumedCapacity` (the figures in docs/adr/0005 and 0009). Local under-counts
 * multi-item transactions (equal-sized items count once), so transaction figures here are a
 * lower bound; the ADRs give the real charge next to them.
 */
import { newId } from "../../../src/conversation/ids.ts";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/ports/clock.ts";
import type { RecordDraft } from "../../../src/protocol/records.ts";
import { countConsumedCapacity, createDynamoClient } from "../../../src/dynamodb/index.ts";
import { STRANDED_GRACE_MS } from "../../../src/dynamodb/session-order.ts";
import { freshStore, useTestClients } from "../../support/dynamodb-fixtures.ts";

const clients = useTestClients();

describe("consumed capacity", () => {
  it("counts read and write units per command, and detaches", async () => {
    const dynamo = createDynamoClient();
    const clock = new ManualClock();
    const { store, dispose } = await freshStore({ dynamo, s3: clients.s3 }, clock);
    const counter = countConsumedCapacity(dynamo);
    const rows: [string, number, number, string][] = [];
    const measure = async <T>(what: string, op: () => Promise<T>): Promise<T> => {
      counter.reset();
      const out = await op();
      const calls = Object.entries(counter.byCommand)
        .map(([name, c]) => `${name.replace("Command", "")}×${c.calls}`)
        .join(" ");
      rows.push([what, counter.readUnits, counter.writeUnits, calls]);
      return out;
    };
    const key = { agent: "agent", instance: "capacity", session: "default" };
    const text = (n: number) => "t".repeat(n);
    const delta = (conversationId: string, n: number): RecordDraft => ({
      kind: "assistant_text_delta",
      conversationId,
      session: "default",
      submissionId: "s1",
      attemptId: "a1",
      turnId: "turn-1",
      time: new Date(clock.now()).toISOString(),
      payload: { text: text(n) },
    });

    const { conversation } = await measure("ensureConversation (new)", () =>
      store.ensureConversation({ id: newId(clock.now()), key, createdAt: clock.now() }),
    );
    await measure("ensureConversation (existing)", () => store.ensureConversation({ id: newId(clock.now()), key, createdAt: clock.now() }));
    const input = { kind: "user" as const, body: text(200) };
    const { submission: sub } = await measure("admitSubmission (200 B body)", () =>
      store.admitSubmission({ id: "s1", conversationId: conversation.id, sessionKey: key, input, createdAt: clock.now() }),
    );
    await measure("admitSubmission (replay)", () =>
      store.admitSubmission({ id: "s1", conversationId: conversation.id, sessionKey: key, input, createdAt: clock.now() }),
    );
    const claimed = await measure("claimSubmission", () =>
      store.claimSubmission({ submissionId: sub.id, attemptId: "a1", ownerId: "owner", leaseExpiresAt: clock.now() + 30_000 }),
    );
    await measure("startAttempt", () => store.startAttempt({ id: "a1", submissionId: sub.id, ownerId: "owner", startedAt: clock.now() }));
    await measure("renewLease", () => store.renewLease({ submissionId: sub.id, attemptId: claimed.attemptId!, leaseExpiresAt: clock.now() + 60_000 }));
    const fence = { submissionId: sub.id, attemptId: "a1" };
    await measure("appendRecords: input record (300 B), fenced", () =>
      store.appendRecords(conversation.id, [{ ...delta(conversation.id, 0), kind: "user_message", payload: { body: text(300) } }], { fence }),
    );
    let head = (await store.readRecords(conversation.id, "")).at(-1)!.id;
    const batch = await measure("appendRecords: 3 deltas of ~1 KB, fenced + expectedHead", () =>
      store.appendRecords(conversation.id, [delta(conversation.id, 900), delta(conversation.id, 1000), delta(conversation.id, 1100)], { fence, expectedHead: head }),
    );
    head = batch.at(-1)!.id;
    await measure("appendRecords: 1 delta of 200 B, fenced + expectedHead", () =>
      store.appendRecords(conversation.id, [delta(conversation.id, 200)], { fence, expectedHead: head }),
    );
    await measure("readRecords: 5 records (~3.5 KB) from the start", () => store.readRecords(conversation.id, ""));
    const last = (await store.readRecords(conversation.id, "")).at(-1)!.id;
    await measure("readRecords: caught up (nothing new)", () => store.readRecords(conversation.id, last));
    await measure("enqueueInbox (steer)", () => store.enqueueInbox(key, { kind: "steer", body: text(100) }));
    await measure("drainInbox (1 steer)", () => store.drainInbox({ submissionId: sub.id, attemptId: "a1", kinds: ["steer", "followUp"] }));
    await measure("drainInbox (empty)", () => store.drainInbox({ submissionId: sub.id, attemptId: "a1", kinds: ["steer", "followUp"] }));
    await store.admitSubmission({ id: "s2", conversationId: conversation.id, sessionKey: key, input, createdAt: clock.now() });
    await measure("reserveSettlement (requireDrainedInbox)", () => store.reserveSettlement(sub.id, "a1", { requireDrainedInbox: true }));
    await measure("appendRecords: submission_settled, unfenced", () =>
      store.appendRecords(conversation.id, [{ ...delta(conversation.id, 0), kind: "submission_settled", payload: { status: "succeeded" } }]),
    );
    await measure("finalizeSettlement (head moves to a queued next)", () => store.finalizeSettlement(sub.id));
    const c2 = await store.claimSubmission({ submissionId: "s2", attemptId: "a2", ownerId: "owner", leaseExpiresAt: clock.now() + 30_000 });
    await measure("releaseSubmission", () => store.releaseSubmission({ submissionId: "s2", attemptId: c2.attemptId! }));
    await store.claimSubmission({ submissionId: "s2", attemptId: "a3", ownerId: "owner", leaseExpiresAt: clock.now() + 30_000 });
    await store.reserveSettlement("s2", "a3");
    await measure("finalizeSettlement (session becomes idle)", () => store.finalizeSettlement("s2"));
    await measure("getSessionHead (idle)", () => store.getSessionHead(key));
    await measure("getSubmission", () => store.getSubmission("s2"));
    await measure("listRunnable (empty table)", () => store.listRunnable());
    await measure("listExpiredLeases (none running)", () => store.listExpiredLeases(clock.now()));
    // The sweep's look for stranded heads (ADR 0040): a row queued behind a live head, past the grace.
    await store.admitSubmission({ id: "s3", conversationId: conversation.id, sessionKey: key, input, createdAt: clock.now() });
    await store.claimSubmission({ submissionId: "s3", attemptId: "a4", ownerId: "owner", leaseExpiresAt: clock.now() + 60_000 });
    await store.admitSubmission({ id: "s4", conversationId: conversation.id, sessionKey: key, input, createdAt: clock.now() });
    await clock.advance(STRANDED_GRACE_MS + 1);
    await measure("listRunnable (one row queued behind a live head)", () => store.listRunnable());

    const table = ["| operation | RCU | WCU (Local) | calls |", "|---|---|---|---|", ...rows.map((r) => `| ${r[0]} | ${r[1]} | ${r[2]} | ${r[3]} |`)];
    process.stdout.write(`\n${table.join("\n")}\n`);
    counter.detach();
    counter.reset();
    await store.getSubmission("s2");
    expect(counter.readUnits, "a detached counter counts nothing").toBe(0);
    expect(rows.find((r) => r[0] === "renewLease")?.[2], "a lease renewal rewrites one small item: 1 WCU").toBe(1);
    expect(rows.find((r) => r[0] === "claimSubmission")?.[2], "a claim: the state item + moving its index entry").toBe(3);
    expect(rows.find((r) => r[0] === "getSubmission")?.[1], "one strongly consistent Query of two small items").toBe(1);
    expect(rows.find((r) => r[0].startsWith("reserveSettlement"))?.[2], "a reserve stays in the running bucket: no index write").toBe(1);
    const batchRow = rows.find((r) => r[0].startsWith("appendRecords: 3 deltas"))!;
    expect(batchRow[3], "a fenced append: the state check and one put, no transaction").toBe("GetItem×1 PutItem×1");
    expect(batchRow[2], "three ~1 KB deltas in one compressed item").toBe(1);
    expect(rows.find((r) => r[0] === "readRecords: caught up (nothing new)")?.[3], "a caught-up poll is one Query").toBe("Query×1");
    const look = rows.find((r) => r[0].startsWith("listRunnable (one row queued"))!;
    expect(look[2], "the sweep's look at a healthy session behind its head writes nothing").toBe(0);
    expect(look[3], "the two buckets' shards, the row's state peeked, its session item read").toBe("Query×8 BatchGetItem×1 GetItem×1");

    await dispose();
    dynamo.destroy();
  });
});
