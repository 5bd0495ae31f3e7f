/**
 * Attachments end to end in the embedded shape (ADR 0034), through a real server on the memory
 * and the SQLite store: bytes in over `POST /attachments`, content-addressed refs out, a dispatch
 * referencing them, and the keyless model's reply describing the image it received (type, size
 * and the digest of the bytes it got); text files reach the model as text. Refusals are 400/413
 * JSON naming the problem, and store nothing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clockTool } from "../../../src/agent/clock-tool.ts";
import { localModel } from "../../../src/agent/local-model.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import { serve, type ServerHandle } from "../../../src/server/server.ts";
import { openSqliteStore } from "../../../src/sqlite/index.ts";
import type { Store } from "../../../src/store/store.ts";
import { digestOf, PNG_1x1, pngOfSize } from "../../support/attachment-fixtures.ts";

interface Served {
  runtime: Runtime;
  store: Store;
  server: ServerHandle;
  url: string;
}

async function start(store: Store, policy?: Record<string, number>, maxUploadBytes?: number): Promise<Served> {
  const runtime = createRuntime({
    agents: { assistant: { initialize: () => ({ ...localModel({ chunkSize: 16 }), tools: [clockTool()] }) } },
    store,
    flushPolicy: { bytes: 0, intervalMs: 0 },
    attachmentPolicy: policy,
    onObserverError: () => {},
  });
  await runtime.start();
  const server = await serve(runtime, { port: 0, hostname: "127.0.0.1", log: () => {}, maxRequestWaitMs: 10_000, maxUploadBytes });
  return { runtime, store, server, url: server.url };
}

async function stop(s: Served | undefined) {
  await s?.server.close();
  await s?.runtime.close();
}

function upload(s: Served, data: Uint8Array | string, contentType: string): Promise<Response> {
  return fetch(`${s.url}/attachments`, { method: "POST", headers: { "content-type": contentType }, body: data });
}

async function expectError(res: Response, status: number, code: string, message?: RegExp) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  const body = (await res.json()) as { error: string; code: string };
  expect(body.code).toBe(code);
  if (message) expect(body.error).toMatch(message);
  return body;
}

/** The text of the last completed assistant message in `records`. */
function replyText(records: ConversationRecord[]): string {
  const last = records.filter((r) => r.kind === "assistant_message_completed").at(-1);
  const body = last?.kind === "assistant_message_completed" ? (last.payload.message.body as { content: { type: string; text?: string }[] }) : undefined;
  return (body?.content ?? []).map((b) => b.text ?? "").join("");
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "attachments-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each([
  ["memory", () => createMemoryStore()],
  ["sqlite", () => openSqliteStore({ path: join(dir, `store-${Math.random().toString(36).slice(2)}.db`) })],
])("attachments over HTTP (%s store)", (_name, makeStore) => {
  let s: Served;
  beforeAll(async () => {
    s = await start(makeStore());
  });
  afterAll(() => stop(s));

  it("an uploaded image reaches the keyless model, which names its type, size and digest", async () => {
    const res = await upload(s, PNG_1x1, "image/png");
    expect(res.status).toBe(201);
    const ref = (await res.json()) as any;
    expect(ref).toEqual({ digest: digestOf(PNG_1x1), mediaType: "image/png", size: PNG_1x1.length });
    // Content-addressed: the same bytes again give the same ref.
    expect(await (await upload(s, PNG_1x1, "image/png")).json()).toEqual(ref);

    const dispatched = await fetch(`${s.url}/agents/assistant/img-1?wait=true`, {
      method: "POST",
      body: JSON.stringify({ kind: "user", body: "what is this?", attachments: [ref] }),
    });
    expect(dispatched.status).toBe(200);
    const { conversationId } = (await dispatched.json()) as { conversationId: string };
    const records = await s.runtime.records(conversationId);
    const input = records.find((r) => r.kind === "user_message");
    expect(input?.kind === "user_message" && input.payload.attachments).toEqual([ref]);
    const reply = replyText(records);
    expect(reply).toContain("I received 1 image:");
    expect(reply).toContain(`- image/png, ${PNG_1x1.length} bytes, ${ref.digest}`);

    // And it can be read back.
    const back = await fetch(`${s.url}/attachments/${ref.digest}`);
    expect(back.status).toBe(200);
    expect(back.headers.get("content-type")).toBe("image/png");
    expect(back.headers.get("x-content-type-options")).toBe("nosniff");
    expect(Buffer.from(await back.arrayBuffer()).equals(PNG_1x1)).toBe(true);
  });

  it("a text file reaches the model as its text", async () => {
    const text = "line one of the notes\nline two: ünïcödé";
    const ref = await (await upload(s, text, "text/plain; charset=utf-8")).json() as any;
    expect(ref).toMatchObject({ mediaType: "text/plain", size: Buffer.byteLength(text) });
    const res = await fetch(`${s.url}/agents/assistant/txt-1?wait=true`, {
      method: "POST",
      body: JSON.stringify({ kind: "user", body: "summarize", attachments: [ref] }),
    });
    const { conversationId } = (await res.json()) as { conversationId: string };
    const reply = replyText(await s.runtime.records(conversationId));
    expect(reply).toContain(`[attachment ${ref.digest} (text/plain, ${ref.size} bytes)]`);
    expect(reply).toContain("line two: ünïcödé");
  });

  it("refuses unsupported types (naming the allowed ones), lying bytes, bad charsets and an empty body; nothing is stored", async () => {
    const svg = Buffer.from("<svg xmlns='http://www.w3.org/2000/svg'/>");
    const body = await expectError(await upload(s, svg, "image/svg+xml"), 400, "invalid_attachment", /unsupported attachment type "image\/svg\+xml"/);
    expect(body.error).toMatch(/allowed are image\/png, image\/jpeg, image\/gif, image\/webp, text\/plain, .*application\/pdf/);
    await expectError(await upload(s, "not a png at all", "image/png"), 400, "invalid_attachment", /the bytes are not a PNG image/);
    await expectError(await upload(s, Buffer.from([0xff, 0xfe, 0x00]), "text/plain"), 400, "invalid_attachment", /not valid UTF-8/);
    await expectError(await upload(s, "abc", "text/plain; charset=latin1"), 400, "invalid_attachment", /charset "latin1"/);
    await expectError(await upload(s, "", "text/plain"), 400, "invalid_attachment", /must not be empty/);
    const none = await fetch(`${s.url}/attachments`, { method: "POST", body: PNG_1x1 });
    await expectError(none, 400, "invalid_request", /Content-Type is required/);
    await expectError(await upload(s, PNG_1x1, "application/octet-stream"), 400, "invalid_attachment", /unsupported attachment type "application\/octet-stream"/);
    for (const bytes of [svg, Buffer.from("not a png at all"), Buffer.from("abc")]) {
      await expect(s.store.getAttachmentRef(digestOf(bytes))).rejects.toMatchObject({ code: "attachment_not_found" });
    }
    await expectError(await fetch(`${s.url}/attachments/${digestOf(svg)}`), 404, "attachment_not_found");
    await expectError(await fetch(`${s.url}/attachments/sha256:nope`), 400, "invalid_request");
  });

  it("the embedded shape has no direct uploads (501 naming the inline limit); the limits are published", async () => {
    const res = await fetch(`${s.url}/attachments/uploads`, {
      method: "POST",
      body: JSON.stringify({ digest: digestOf(PNG_1x1), mediaType: "image/png", size: PNG_1x1.length }),
    });
    await expectError(res, 501, "uploads_unsupported", /POST \/attachments takes attachments of up to 33554432 bytes/);
    const limits = await (await fetch(`${s.url}/attachments/limits`)).json() as any;
    expect(limits).toMatchObject({ directUploads: false, maxUploadBytes: 32 * 1024 * 1024, types: { "image/png": 5 * 1024 * 1024 } });
  });
});

describe("attachment limits", () => {
  let s: Served;
  beforeAll(async () => {
    s = await start(createMemoryStore(), { "image/png": 1_000, "text/plain": 10 }, 2_000);
  });
  afterAll(() => stop(s));

  it("a size over its type's limit is a 400; a body over maxUploadBytes a 413; neither is stored", async () => {
    const big = pngOfSize(1_500);
    await expectError(await upload(s, big, "image/png"), 400, "invalid_attachment", /image\/png attachment of 1500 bytes exceeds its limit of 1000 bytes/);
    const huge = pngOfSize(3_000);
    await expectError(await upload(s, huge, "image/png"), 413, "payload_too_large", /exceeds the 2000 bytes POST \/attachments takes/);
    for (const bytes of [big, huge]) {
      await expect(s.store.getAttachmentRef(digestOf(bytes))).rejects.toMatchObject({ code: "attachment_not_found" });
    }
    // A configured policy replaces the default one: PDFs are not allowed here.
    await expectError(await upload(s, "%PDF-1.4\n", "application/pdf"), 400, "invalid_attachment", /allowed are image\/png, text\/plain$/);
  });

  it("a dispatch naming an attachment that was never uploaded is a 400 and stores nothing", async () => {
    const ref = { digest: digestOf(pngOfSize(900, 3)), mediaType: "image/png", size: 900 };
    const res = await fetch(`${s.url}/agents/assistant/never?wait=true`, {
      method: "POST",
      body: JSON.stringify({ kind: "user", body: "look", attachments: [ref] }),
    });
    await expectError(res, 400, "attachment_not_found");
    await expect(s.store.getConversation({ agent: "assistant", instance: "never", session: "default" })).rejects.toMatchObject({ code: "conversation_not_found" });
  });
});
