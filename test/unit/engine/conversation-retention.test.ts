/**
 * Conversation retention, embedded (`conversationRetentionMs`, ADR 0034), for the memory and
 * SQLite stores: the sweep deletes a conversation idle longer than the retention (with its
 * submissions and the image only it referenced) and keeps one as old but active since, whose
 * age counts from its last record; a second sweep finds nothing. A bad setting is refused. The
 * runtime and the store share a clock moved forward by hours (record ids carry their append time).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scriptedModel } from "../../../src/agent/scripted-model.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { systemClock, type Clock } from "../../../src/ports/clock.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import { openSqliteStore } from "../../../src/sqlite/index.ts";
import type { Store } from "../../../src/store/store.ts";
import { pngOfSize } from "../../support/attachment-fixtures.ts";

const HOUR = 3_600_000;
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "retention-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each([
  ["memory", (clock: Clock) => createMemoryStore({ clock })],
  ["sqlite", (clock: Clock) => openSqliteStore({ clock, path: join(dir, `retention-${Math.random().toString(36).slice(2)}.db`) })],
])("conversationRetentionMs (%s store)", (_name, makeStore) => {
  let store: Store;
  let runtime: Runtime;
  /** The wall clock moved forward by `shift` (records and the sweep read this clock). */
  let shift = 0;
  const clock: Clock = { now: () => Date.now() + shift, sleep: (ms, signal) => systemClock.sleep(ms, signal) };

  beforeAll(async () => {
    store = makeStore(clock);
    const model = scriptedModel(Array.from({ length: 10 }, () => [{ text: "ok" }]));
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
  afterAll(() => runtime.close());

  const say = async (instance: string, body: string, attachments?: { digest: string; mediaType: string; size: number }[]) => {
    const { submissionId, conversationId } = await runtime.dispatch({ agent: "chat", instance, message: { kind: "user", body, ...(attachments ? { attachments } : {}) } });
    expect((await runtime.wait(submissionId)).status).toBe("succeeded");
    return { submissionId, conversationId };
  };

  it("deletes a conversation idle past the retention and keeps one active since, however old", async () => {
    const image = await runtime.uploadAttachment({ contentType: "image/png", data: pngOfSize(1_000, Math.floor(Math.random() * 1e6)) });
    const idle = await say("idle", "hello", [image]);
    const active = await say("active", "hello");
    shift += 2 * HOUR;
    await say("active", "still here");
    shift += 2 * HOUR; // idle: 4 h since its last record; active: 2 h

    const report = await runtime.sweep();
    expect(report.expiredConversations).toBe(1);
    await expect(store.getConversation({ agent: "chat", instance: "idle", session: "default" })).rejects.toMatchObject({ code: "conversation_not_found" });
    expect(await store.readRecords(idle.conversationId)).toEqual([]);
    await expect(store.getSubmission(idle.submissionId)).rejects.toMatchObject({ code: "submission_not_found" });
    await expect(store.getAttachmentRef(image.digest)).rejects.toMatchObject({ code: "attachment_not_found" });
    expect((await store.getConversation({ agent: "chat", instance: "active", session: "default" })).id).toBe(active.conversationId);
    expect((await store.readRecords(active.conversationId)).length).toBeGreaterThan(0);
    expect((await runtime.sweep()).expiredConversations).toBe(0);

    shift += 2 * HOUR; // active: 4 h since its last record
    expect((await runtime.sweep()).expiredConversations).toBe(1);
    await expect(store.getConversation({ agent: "chat", instance: "active", session: "default" })).rejects.toMatchObject({ code: "conversation_not_found" });
  });

  it("refuses a retention that is not a positive number of ms", () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      expect(() => createRuntime({ agents: { chat: { initialize: () => ({}) as never } }, store: makeStore(clock), conversationRetentionMs: bad })).toThrow(/conversationRetentionMs must be a positive/);
    }
  });
});
