/**
 * Deleting a conversation in the serverless shape (ADR 0034), on the local cloud (the http and
 * worker functions of `src/lambda/`, DynamoDB Local, fauxqs SQS + S3): `DELETE
 * /agents/:agent/:instance` through the HTTP function takes the conversation, its submissions and
 * the image only it referenced; an image another conversation references stays; a second DELETE
 * answers the same.
 */
import { randomInt, randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createClient } from "../../../src/client/index.ts";
import { pngOfSize } from "../../support/attachment-fixtures.ts";
import { useLocalCloud } from "../../support/local-cloud-suite.ts";

const agentsModule = fileURLToPath(new URL("../../support/local-cloud-fixtures/agents.ts", import.meta.url));
const suite = useLocalCloud({ agentsModule, workers: 1, workerTimeoutMs: 20_000, streamMaxMs: 3_000, httpTimeoutMs: 30_000, sweeperRateMs: false });
const uid = () => randomUUID().slice(0, 8);

describe("local cloud: deleting a conversation", () => {
  it("DELETE takes the conversation and its own image, keeps a shared one, and answers the same twice", async () => {
    suite.dumpLogsOnFailure();
    const client = createClient({ baseUrl: suite.cloud.url });
    const own = await client.uploadAttachment(pngOfSize(2_000, randomInt(1_000_000)), "image/png");
    const shared = await client.uploadAttachment(pngOfSize(2_000, randomInt(1_000_000)), "image/png");
    const instance = `del-${uid()}`;
    const gone = await client.dispatchAndWait("assistant", instance, { kind: "user", body: "two pictures", attachments: [own, shared] });
    expect(gone.status).toBe("succeeded");
    const kept = await client.dispatchAndWait("assistant", `keep-${uid()}`, { kind: "user", body: "one picture", attachments: [shared] });
    const keptRecords = await suite.store.readRecords(kept.conversationId);

    const first = await fetch(`${suite.cloud.url}/agents/assistant/${instance}`, { method: "DELETE" });
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ status: "deleted", session: "default" });
    await expect(suite.store.getConversation({ agent: "assistant", instance, session: "default" })).rejects.toMatchObject({ code: "conversation_not_found" });
    expect(await suite.store.readRecords(gone.conversationId)).toEqual([]);
    await expect(suite.store.getSubmission(gone.submissionId)).rejects.toMatchObject({ code: "submission_not_found" });
    await expect(suite.store.getAttachmentRef(own.digest)).rejects.toMatchObject({ code: "attachment_not_found" });
    expect(await suite.store.getAttachmentRef(shared.digest)).toEqual(shared);
    expect(await suite.store.readRecords(kept.conversationId)).toEqual(keptRecords);

    const second = await fetch(`${suite.cloud.url}/agents/assistant/${instance}`, { method: "DELETE" });
    expect(second.status).toBe(200);
    expect(await second.json()).toEqual({ status: "deleted", session: "default" });
  });
});
