/**
 * Attachments in the serverless shape (ADR 0034), on the local cloud (the http and worker
 * functions of `src/lambda/`, DynamoDB Local, fauxqs SQS + S3): a small image over
 * `POST /attachments` and a large one through the presigned direct upload reach the keyless model
 * (its reply names type, size and digest from the bytes it received); a body over the function's
 * inline limit is a 413; an upload whose bytes do not match its declared digest is refused at
 * completion and the digest stays unusable; bad types are 400s naming the allowed ones. Through
 * the http function (src/lambda/http.ts) too: `POST /attachments/uploads` has a body limit, and a
 * path with a `..` segment is refused before routing (issue 33).
 */
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createClient } from "../../../src/client/index.ts";
import { LAMBDA_MAX_UPLOAD_BYTES } from "../../../src/lambda/settings.ts";
import { digestOf, PNG_1x1, pngOfSize } from "../../support/attachment-fixtures.ts";
import { useLocalCloud } from "../../support/local-cloud-suite.ts";
import { rawPost } from "../../support/raw-post.ts";

const agentsModule = fileURLToPath(new URL("../../support/local-cloud-fixtures/agents.ts", import.meta.url));
const suite = useLocalCloud({ agentsModule, workers: 1, workerTimeoutMs: 20_000, streamMaxMs: 3_000, httpTimeoutMs: 30_000, sweeperRateMs: false });
const uid = () => randomUUID().slice(0, 8);

async function replyOf(conversationId: string): Promise<string> {
  const records = await suite.store.readRecords(conversationId);
  const last = records.filter((r) => r.kind === "assistant_message_completed").at(-1);
  const body = last?.kind === "assistant_message_completed" ? (last.payload.message.body as { content: { text?: string }[] }) : undefined;
  return (body?.content ?? []).map((b) => b.text ?? "").join("");
}

describe("local cloud: attachments", () => {
  it("a small image over POST /attachments and a large one through the presigned upload both reach the model", async () => {
    suite.dumpLogsOnFailure();
    const client = createClient({ baseUrl: suite.cloud.url });
    const small = await client.uploadAttachment(PNG_1x1, "image/png");
    expect(small).toEqual({ digest: digestOf(PNG_1x1), mediaType: "image/png", size: PNG_1x1.length });

    // Over the function URL's inline limit: the client declares it, posts it to S3, completes it.
    const large = pngOfSize(LAMBDA_MAX_UPLOAD_BYTES + 300_000);
    const inline = await fetch(`${suite.cloud.url}/attachments`, { method: "POST", headers: { "content-type": "image/png" }, body: large });
    expect(inline.status).toBe(413);
    expect(await inline.json()).toMatchObject({ code: "payload_too_large", error: expect.stringMatching(/POST \/attachments\/uploads/) });
    const ref = await client.uploadAttachment(large, "image/png");
    expect(ref).toEqual({ digest: digestOf(large), mediaType: "image/png", size: large.length });
    // The staged object is gone once stored content-addressed; a repeated completion answers the same.
    expect(await suite.store.getAttachmentRef(ref.digest)).toEqual(ref);

    const settled = await client.dispatchAndWait("assistant", `att-${uid()}`, { kind: "user", body: "two pictures", attachments: [small, ref] });
    expect(settled.status).toBe("succeeded");
    const reply = await replyOf(settled.conversationId);
    expect(reply).toContain("I received 2 images:");
    expect(reply).toContain(`- image/png, ${PNG_1x1.length} bytes, ${small.digest}`);
    expect(reply).toContain(`- image/png, ${large.length} bytes, ${ref.digest}`);
  });

  it("an upload whose bytes do not match its declared digest is refused at completion; a dispatch cannot use the digest", async () => {
    suite.dumpLogsOnFailure();
    const promised = pngOfSize(5_000, 11);
    const sent = pngOfSize(5_000, 12);
    const declared = await fetch(`${suite.cloud.url}/attachments/uploads`, {
      method: "POST",
      body: JSON.stringify({ digest: digestOf(promised), mediaType: "image/png", size: promised.length }),
    });
    expect(declared.status).toBe(201);
    const upload = (await declared.json()) as { uploadId: string; url: string; fields: Record<string, string> };
    const form = new FormData();
    for (const [name, value] of Object.entries(upload.fields)) form.append(name, value);
    form.append("file", new Blob([sent], { type: "image/png" }));
    expect((await fetch(upload.url, { method: "POST", body: form })).ok).toBe(true);

    const completed = await fetch(`${suite.cloud.url}/attachments/uploads/${upload.uploadId}/complete`, { method: "POST" });
    expect(completed.status).toBe(400);
    expect(await completed.json()).toMatchObject({ code: "invalid_attachment", error: expect.stringMatching(/do not match the declared digest/) });
    await expect(suite.store.getAttachmentRef(digestOf(promised))).rejects.toMatchObject({ code: "attachment_not_found" });
    // The staged object was deleted: completing again finds nothing.
    expect((await fetch(`${suite.cloud.url}/attachments/uploads/${upload.uploadId}/complete`, { method: "POST" })).status).toBe(404);

    const res = await fetch(`${suite.cloud.url}/agents/assistant/lie-${uid()}`, {
      method: "POST",
      body: JSON.stringify({ kind: "user", body: "look", attachments: [{ digest: digestOf(promised), mediaType: "image/png", size: promised.length }] }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: "attachment_not_found" });
  });

  it("bad types and sizes are 400s naming the problem, inline and direct", async () => {
    const svg = await fetch(`${suite.cloud.url}/attachments`, { method: "POST", headers: { "content-type": "image/svg+xml" }, body: "<svg/>" });
    expect(svg.status).toBe(400);
    expect(await svg.json()).toMatchObject({ code: "invalid_attachment", error: expect.stringMatching(/allowed are image\/png, .*application\/pdf/) });
    const tooBig = await fetch(`${suite.cloud.url}/attachments/uploads`, {
      method: "POST",
      body: JSON.stringify({ digest: digestOf(PNG_1x1), mediaType: "image/png", size: 6 * 1024 * 1024 }),
    });
    expect(tooBig.status).toBe(400);
    expect(await tooBig.json()).toMatchObject({ code: "invalid_attachment", error: expect.stringMatching(/exceeds its limit of 5242880 bytes/) });
    const badDigest = await fetch(`${suite.cloud.url}/attachments/uploads`, { method: "POST", body: JSON.stringify({ digest: "md5:x", mediaType: "image/png", size: 10 }) });
    expect(badDigest.status).toBe(400);
    const limits = (await (await fetch(`${suite.cloud.url}/attachments/limits`)).json()) as Record<string, unknown>;
    expect(limits).toMatchObject({ directUploads: true, maxUploadBytes: LAMBDA_MAX_UPLOAD_BYTES });
  });
});

describe("local cloud: the http function's request checks (issue 33)", () => {
  it("POST /attachments/uploads over the body limit is a 413; a path with a .. segment is a 400 before any route, nothing admitted", async () => {
    suite.dumpLogsOnFailure();
    const big = JSON.stringify({ digest: `sha256:${"0".repeat(64)}`, mediaType: "image/png", size: 1, pad: "x".repeat(1024 * 1024) });
    const uploads = await fetch(`${suite.cloud.url}/attachments/uploads`, { method: "POST", headers: { "content-type": "application/json" }, body: big });
    expect(uploads.status).toBe(413);
    expect(await uploads.json()).toMatchObject({ code: "payload_too_large" });

    const instance = `dots-${uid()}`;
    for (const path of [`/callbacks/../agents/recall/${instance}`, `/callbacks/%2e%2e/agents/recall/${instance}`]) {
      const answer = await rawPost(suite.cloud.url, path, JSON.stringify({ kind: "user", body: "hi" }));
      expect(answer.status, `${path}: ${answer.body}`).toBe(400);
      expect(JSON.parse(answer.body)).toEqual({ error: 'request path has a "." or ".." segment', code: "invalid_request" });
    }
    await expect(suite.store.getConversation({ agent: "recall", instance, session: "default" })).rejects.toMatchObject({ code: "conversation_not_found" });
  }, 60_000);
});
