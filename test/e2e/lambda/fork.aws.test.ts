/**
 * Forking a conversation in the serverless shape (ADR 0034), on the local cloud (the http and
 * worker functions of `src/lambda/`, DynamoDB Local, fauxqs SQS + S3): `POST
 * /agents/:agent/:instance/fork` through the HTTP function copies the source's log up to a
 * mid-conversation record into a new session and dispatches the edit there; the worker's model
 * is given the prefix plus the edit. The image of the copied prefix is the fork's too: deleting
 * the source keeps it.
 */
import { randomInt, randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createClient } from "../../../src/client/index.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { pngOfSize } from "../../support/attachment-fixtures.ts";
import { useLocalCloud } from "../../support/local-cloud-suite.ts";

const agentsModule = fileURLToPath(new URL("../../support/local-cloud-fixtures/agents.ts", import.meta.url));
const suite = useLocalCloud({ agentsModule, workers: 1, workerTimeoutMs: 20_000, streamMaxMs: 3_000, httpTimeoutMs: 30_000, sweeperRateMs: false });
const uid = () => randomUUID().slice(0, 8);

/** A record without what a copy renews (id, conversation, session). */
const plain = ({ id: _id, conversationId: _c, session: _s, ...rest }: ConversationRecord) => rest;

describe("local cloud: forking a conversation", () => {
  it("forks after a mid-conversation record: the model gets the prefix plus the edit; the fork keeps its image when the source is deleted", async () => {
    suite.dumpLogsOnFailure();
    const client = createClient({ baseUrl: suite.cloud.url });
    const image = await client.uploadAttachment(pngOfSize(2_000, randomInt(1_000_000)), "image/png");
    const instance = `fork-${uid()}`;
    const first = await client.dispatchAndWait("recall", instance, { kind: "user", body: "one", attachments: [image] });
    expect(first.status).toBe("succeeded");
    expect((await client.dispatchAndWait("recall", instance, { kind: "user", body: "two" })).status).toBe("succeeded");
    expect((await client.dispatchAndWait("recall", instance, { kind: "user", body: "three" })).status).toBe("succeeded");
    const source = await suite.store.readRecords(first.conversationId);
    const forkPoint = source.find((r) => r.kind === "submission_settled" && r.submissionId === first.submissionId)!;

    const res = await fetch(`${suite.cloud.url}/agents/recall/${instance}/fork`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ fromRecordId: forkPoint.id, session: "edited", message: { kind: "user", body: "two, edited" } }),
    });
    expect(res.status, await res.clone().text()).toBe(201);
    const forked = (await res.json()) as { session: string; conversationId: string; records: number; submissionId: string };
    expect(forked).toMatchObject({ session: "edited", submissionId: expect.any(String) });
    const settled = await client.waitForSettled("recall", instance, forked.submissionId, { session: "edited", signal: AbortSignal.timeout(60_000) });
    expect(settled.status).toBe("succeeded");

    const copy = await suite.store.readRecords(forked.conversationId);
    const reply = copy.filter((r) => r.kind === "assistant_message_completed").at(-1)!;
    expect(JSON.stringify(reply.payload)).toContain("context: one | two, edited");
    const prefix = source.slice(0, source.indexOf(forkPoint) + 1).filter((r) => r.kind !== "assistant_text_delta" && r.kind !== "assistant_thinking_delta");
    expect(copy.slice(1, forked.records).map(plain)).toEqual(prefix.slice(1).map(plain));

    // The source goes; the fork's copy of the first message still references the image.
    expect((await fetch(`${suite.cloud.url}/agents/recall/${instance}`, { method: "DELETE" })).status).toBe(200);
    expect(await suite.store.readRecords(first.conversationId)).toEqual([]);
    expect(await suite.store.getAttachmentRef(image.digest)).toEqual(image);
    expect(await suite.store.readRecords(forked.conversationId)).toEqual(copy);
  }, 120_000);

  it("refuses a fork into a session that has a conversation, and one from an unknown record, writing nothing", async () => {
    const client = createClient({ baseUrl: suite.cloud.url });
    const instance = `fork-bad-${uid()}`;
    const done = await client.dispatchAndWait("recall", instance, { kind: "user", body: "only" });
    const records = await suite.store.readRecords(done.conversationId);
    const post = (body: unknown) =>
      fetch(`${suite.cloud.url}/agents/recall/${instance}/fork`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const taken = await post({ fromRecordId: records[1]!.id, session: "default" });
    expect(taken.status).toBe(409);
    expect(await taken.json()).toMatchObject({ code: "conversation_exists", error: expect.stringContaining("already has a conversation") });
    const unknown = await post({ fromRecordId: "01ZZZZZZZZZZZZZZZZZZZZZZZZ", session: "nope" });
    expect(unknown.status).toBe(400);
    await expect(suite.store.getConversation({ agent: "recall", instance, session: "nope" })).rejects.toMatchObject({ code: "conversation_not_found" });
    expect(await suite.store.readRecords(done.conversationId)).toEqual(records);
  });
});
