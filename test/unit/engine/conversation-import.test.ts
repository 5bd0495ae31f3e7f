/**
 * Export → import between two embedded deployments (ADR 0034), through their HTTP servers, for
 * the memory and SQLite stores: `GET …/export` of a conversation with an image, a compaction and
 * several runs, `POST …/import` of it into another deployment gives a conversation whose records
 * equal the source's apart from the renewed ids (record, conversation, submission, the session
 * address), whose image is there, and on which the next run's model gets the same context as on
 * the source. Bad input (a malformed line, an unknown record kind, a cut-off export, bytes that
 * do not match their digest, an attachment neither carried nor stored, a session that has a
 * conversation, a message over the dispatch's 256 KiB, more than `MAX_IMPORT_RECORDS` records) is a
 * 400 `invalid_export` naming the line or a 409 `conversation_exists`, and writes nothing. An import body has its own limit (`maxImportBytes`, 413 above it), not the
 * 1 MiB of the other requests.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Message } from "@earendil-works/pi-ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scriptedModel, type ScriptedModel } from "../../../src/agent/scripted-model.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import type { ExportLine, ImportAnswer } from "../../../src/protocol/conversation-export.ts";
import type { AttachmentRef, ConversationRecord } from "../../../src/protocol/records.ts";
import { MAX_BODY_BYTES, MAX_IMPORT_RECORDS } from "../../../src/protocol/limits.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import { serve, type ServerHandle } from "../../../src/server/server.ts";
import { openSqliteStore } from "../../../src/sqlite/index.ts";
import type { Store } from "../../../src/store/store.ts";
import { digestOf, pngOfSize } from "../../support/attachment-fixtures.ts";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "import-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const textOf = (m: Message) =>
  typeof m.content === "string" ? m.content : m.content.map((c) => (c.type === "text" ? c.text : c.type === "image" ? `[image ${c.data.length}]` : "")).join("");
/** Answers with the user messages of its context (and serves as a summary when asked for one). */
const recall = (messages: Message[]) => [{ text: `seen: ${messages.filter((m) => m.role === "user").map(textOf).join(" | ").slice(0, 300)}` }];

interface Deployment {
  store: Store;
  runtime: Runtime;
  server: ServerHandle;
  model: ScriptedModel;
}

async function deploy(store: Store): Promise<Deployment> {
  const model = scriptedModel(Array.from({ length: 20 }, () => recall));
  const runtime = createRuntime({
    agents: { chat: { initialize: () => ({ model: { ...model.model, input: ["text", "image"] }, streamFn: model.streamFn }) } },
    store,
    flushPolicy: { bytes: 0, intervalMs: 0 },
    onObserverError: () => {},
  });
  await runtime.start();
  const server = await serve(runtime, { port: 0, hostname: "127.0.0.1", log: () => {}, maxRequestWaitMs: 20_000 });
  return { store, runtime, server, model };
}

/** A record without what an import renews (its id, conversation and session); submission ids mapped by `subs`. */
function comparable(record: ConversationRecord, subs: Map<string, string>, ids: Map<string, string>) {
  const { id: _id, conversationId: _c, session: _s, ...rest } = record;
  const out = { ...rest } as Record<string, unknown>;
  if (record.submissionId !== undefined) out.submissionId = subs.get(record.submissionId) ?? `unmapped ${record.submissionId}`;
  if (record.kind === "conversation_created") delete out.payload;
  if (record.kind === "approval_requested") out.payload = { ...record.payload, approvalId: undefined };
  if (record.kind === "compaction" && record.payload.firstKeptEntryId !== undefined) {
    out.payload = { ...record.payload, firstKeptEntryId: ids.get(record.payload.firstKeptEntryId) ?? "unmapped" };
  }
  return out;
}

describe.each([
  ["memory", () => createMemoryStore()],
  ["sqlite", () => openSqliteStore({ path: join(dir, `import-${Math.random().toString(36).slice(2)}.db`) })],
])("export → import (%s store)", (_name, makeStore) => {
  let source: Deployment;
  let target: Deployment;
  let image: AttachmentRef;
  let exported: string;

  beforeAll(async () => {
    source = await deploy(makeStore());
    target = await deploy(makeStore());
    const upload = await fetch(`${source.server.url}/attachments`, { method: "POST", headers: { "content-type": "image/png" }, body: pngOfSize(3_000, 7) });
    image = (await upload.json()) as AttachmentRef;
    const say = async (body: Record<string, unknown>) => {
      const res = await post(source, "/agents/chat/thread?wait=true", body);
      expect(res.status, await res.clone().text()).toBe(200);
    };
    await say({ kind: "user", body: "one", attachments: [image] });
    await say({ kind: "user", body: "two" });
    expect((await post(source, "/agents/chat/thread/compact?wait=true", {})).status).toBe(200);
    await say({ kind: "user", body: "three" });
    const res = await fetch(`${source.server.url}/agents/chat/thread/export`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/jsonl");
    exported = await res.text();
  });
  afterAll(async () => {
    for (const d of [source, target]) {
      await d?.server.close();
      await d?.runtime.close();
    }
  });

  const post = (d: Deployment, path: string, body: unknown, raw = false) =>
    fetch(`${d.server.url}${path}`, { method: "POST", headers: { "content-type": raw ? "application/jsonl" : "application/json" }, body: raw ? (body as string) : JSON.stringify(body) });
  const lines = (text: string) => text.trim().split("\n").map((l) => JSON.parse(l) as ExportLine);
  const text = (ls: unknown[]) => `${ls.map((l) => JSON.stringify(l)).join("\n")}\n`;
  /** The export's header, then `n` one-word user messages in log order, then the end line. */
  const manyRecords = (good: ExportLine[], n: number) => {
    const first = (good[1] as Extract<ExportLine, { type: "record" }>).record;
    const records = Array.from({ length: n }, (_, i) => ({ type: "record", record: { ...first, id: `01K${String(i).padStart(23, "0")}`, kind: "user_message", payload: { body: "hi" } } }));
    return text([good[0], ...records, { type: "end", records: n, attachments: 0 }]);
  };

  it("exports the header, every record in log order, the image inline and the end line", async () => {
    const conversation = await source.store.getConversation({ agent: "chat", instance: "thread", session: "default" });
    const records = await source.store.readRecords(conversation.id);
    const ls = lines(exported);
    expect(ls[0]).toEqual({ type: "conversation", version: 1, agent: "chat", instance: "thread", session: "default", conversationId: conversation.id, createdAt: conversation.createdAt });
    expect(ls.slice(1, 1 + records.length)).toEqual(records.map((record) => ({ type: "record", record })));
    expect(records.some((r) => r.kind === "compaction")).toBe(true);
    expect(ls[1 + records.length]).toEqual({ type: "attachment", ...image, data: pngOfSize(3_000, 7).toString("base64") });
    expect(ls.at(-1)).toEqual({ type: "end", records: records.length, attachments: 1 });
    expect((await fetch(`${source.server.url}/agents/chat/nobody/export`)).status).toBe(404);
  });

  it("imports into another deployment: records equal apart from renewed ids, the image stored, the same model context after", async () => {
    const res = await post(target, "/agents/chat/copy/import?session=restored", exported, true);
    expect(res.status, await res.clone().text()).toBe(201);
    const answer = (await res.json()) as ImportAnswer;
    const sourceConversation = await source.store.getConversation({ agent: "chat", instance: "thread", session: "default" });
    const before = await source.store.readRecords(sourceConversation.id);
    expect(answer).toMatchObject({ agent: "chat", instance: "copy", session: "restored", records: before.length, attachments: 1 });
    const after = await target.store.readRecords(answer.conversationId);
    expect(after).toHaveLength(before.length);

    // Every id is new; each source submission maps to one new submission id, in order of appearance.
    const subs = new Map<string, string>();
    const ids = new Map<string, string>();
    before.forEach((r, i) => {
      ids.set(r.id, after[i]!.id);
      if (r.submissionId !== undefined && after[i]!.submissionId !== undefined) subs.set(r.submissionId, after[i]!.submissionId!);
    });
    expect(after.every((r, i) => r.id !== before[i]!.id && r.conversationId === answer.conversationId && r.session === "restored")).toBe(true);
    expect([...subs].every(([old, fresh]) => old !== fresh)).toBe(true);
    expect(new Set(subs.values()).size).toBe(subs.size);
    const identity = new Map([...subs.values()].map((v) => [v, v]));
    const afterIds = new Map(after.map((r) => [r.id, r.id]));
    expect(after.map((r) => comparable(r, identity, afterIds))).toEqual(before.map((r) => comparable(r, subs, ids)));
    expect(after[0]).toMatchObject({ kind: "conversation_created", payload: { agent: "chat", instance: "copy", session: "restored" } });
    expect((await target.store.getAttachment(image.digest)).data).toEqual(new Uint8Array(pngOfSize(3_000, 7)));

    // The next run sees the same history on both sides.
    const next = { kind: "user", body: "four" };
    expect((await post(source, "/agents/chat/thread?wait=true", next)).status).toBe(200);
    const imported = await post(target, "/agents/chat/copy?wait=true", { ...next, session: "restored" });
    expect(imported.status, await imported.clone().text()).toBe(200);
    const context = (m: ScriptedModel) => m.calls.at(-1)!.messages.map((msg) => `${msg.role}: ${textOf(msg)}`);
    expect(context(target.model)).toEqual(context(source.model));
    expect(context(target.model).join("\n")).toContain("[image");
  });

  it("refuses bad input with 400 invalid_export or 409 conversation_exists, writing nothing", async () => {
    const good = lines(exported);
    const end = good.length - 1;
    const withLine = (i: number, line: unknown) => text(good.map((l, j) => (j === i ? line : l)));
    const recordLine = good[2] as Extract<ExportLine, { type: "record" }>;
    const attachmentAt = good.findIndex((l) => l.type === "attachment");
    const otherPng = pngOfSize(3_000, 8);
    // The user message "two": no attachment, so changing it breaks nothing else of the export.
    const plainAt = good.findIndex((l) => l.type === "record" && l.record.kind === "user_message" && l.record.payload.body === "two");
    const plain = good[plainAt] as Extract<ExportLine, { type: "record" }>;
    const cases: [string, string, RegExp][] = [
      ["a malformed line", withLine(2, "{not json").replace(`"{not json"`, "{not json"), /line 3: not JSON/],
      ["an unknown record kind", withLine(2, { ...recordLine, record: { ...recordLine.record, kind: "telepathy" } }), /line 3: unknown record kind "telepathy"/],
      ["a cut-off export", text(good.slice(0, end)), /without its end line/],
      ["records out of order", text([good[0], good[2], good[1], ...good.slice(3)]), /line 3: record .* does not follow/],
      ["bytes that do not match their digest", withLine(attachmentAt, { ...good[attachmentAt]!, data: otherPng.toString("base64") }), new RegExp(`line ${attachmentAt + 1}: attachment sha256:[0-9a-f]+: the data's digest is ${digestOf(otherPng)}`)],
      ["an attachment neither carried nor stored", text(good.filter((_, j) => j !== attachmentAt).map((l) => (l.type === "end" ? { ...l, attachments: 0 } : l))), /referenced but neither carried by the export nor stored here/],
      ["an unknown line type", withLine(end, { type: "trailer" }), /unknown line type "trailer"/],
      ["an empty body", "", /empty/],
      // An import obeys the limits of a dispatch (issue 33: a 30 MiB user message imported and reached the model).
      ["a user message over the dispatch's 256 KiB", withLine(plainAt, { ...plain, record: { ...plain.record, payload: { body: "x".repeat(MAX_BODY_BYTES + 1) } } }), new RegExp(`line ${plainAt + 1}: record .* \\(user_message\\): body exceeds ${MAX_BODY_BYTES} bytes`)],
      ["a signal over the dispatch's 256 KiB", withLine(plainAt, { ...plain, record: { ...plain.record, kind: "signal", payload: { type: "ci", body: "é".repeat(MAX_BODY_BYTES / 2 + 1) } } }), new RegExp(`line ${plainAt + 1}: record .* \\(signal\\): body exceeds ${MAX_BODY_BYTES} bytes`)],
      ["a signal without a type", withLine(plainAt, { ...plain, record: { ...plain.record, kind: "signal", payload: { body: "x" } } }), new RegExp(`line ${plainAt + 1}: record .* \\(signal\\): a signal needs a type`)],
      // More records than one import may bring (a rebuild's cost grows with them), however small.
      ["more records than MAX_IMPORT_RECORDS", manyRecords(good, MAX_IMPORT_RECORDS + 1), new RegExp(`line ${MAX_IMPORT_RECORDS + 2}: more than ${MAX_IMPORT_RECORDS} records`)],
    ];
    const fresh = deploy(makeStore());
    const empty = await fresh;
    try {
      for (const [what, body, message] of cases) {
        const res = await post(empty, "/agents/chat/bad/import", body, true);
        expect(res.status, what).toBe(400);
        const error = (await res.json()) as { code: string; error: string };
        expect(error.code, what).toBe("invalid_export");
        expect(error.error, what).toMatch(message);
        await expect(empty.store.getConversation({ agent: "chat", instance: "bad", session: "default" }), what).rejects.toMatchObject({ code: "conversation_not_found" });
      }
      await expect(empty.store.getAttachmentRef(image.digest)).rejects.toMatchObject({ code: "attachment_not_found" });

      // Into a session that has a conversation: 409, its records unchanged.
      const existing = await source.store.getConversation({ agent: "chat", instance: "thread", session: "default" });
      const records = await source.store.readRecords(existing.id);
      const taken = await post(source, "/agents/chat/thread/import", exported, true);
      expect(taken.status).toBe(409);
      expect(await taken.json()).toMatchObject({ code: "conversation_exists", error: expect.stringContaining("already has a conversation") });
      expect(await source.store.readRecords(existing.id)).toEqual(records);
      expect((await post(empty, "/agents/nobody/x/import", exported, true)).status).toBe(404);

      // The import's own body limit (maxImportBytes), not the 1 MiB of other requests.
      const small = await serve(empty.runtime, { port: 0, hostname: "127.0.0.1", log: () => {}, maxImportBytes: 1_000, maxBodyBytes: 100_000 });
      try {
        const res = await fetch(`${small.url}/agents/chat/big/import`, { method: "POST", headers: { "content-type": "application/jsonl" }, body: exported });
        expect(res.status).toBe(413);
        expect(await res.json()).toMatchObject({ code: "payload_too_large", error: "import body exceeds 1000 bytes" });
      } finally {
        await small.close();
      }
      const tight = await serve(empty.runtime, { port: 0, hostname: "127.0.0.1", log: () => {}, maxBodyBytes: 1_000 });
      try {
        expect(exported.length).toBeGreaterThan(1_000);
        const res = await fetch(`${tight.url}/agents/chat/whole/import`, { method: "POST", headers: { "content-type": "application/jsonl" }, body: exported });
        expect(res.status, await res.clone().text()).toBe(201);
      } finally {
        await tight.close();
      }
    } finally {
      await empty.server.close();
      await empty.runtime.close();
    }
  });
});
