/**
 * Lean history over SSE, embedded (a server on the SQLite store, ADR 0034): after a settled run's
 * deltas were folded, a reader resuming from one of those delta ids (Last-Event-ID) gets the
 * records after it, no gap and no duplicate, and the text it shows is the text a reader of the
 * whole live stream showed; a fresh replay sends the completed messages.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clockTool } from "../../../src/agent/clock-tool.ts";
import { MessageView } from "../../../src/client/message-view.ts";
import { isStreamingDelta } from "../../../src/conversation/checkpoint.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import { serve, type ServerHandle } from "../../../src/server/server.ts";
import { openSqliteStore, type SqliteStore } from "../../../src/sqlite/index.ts";
import { Gate, gatedLocalModel, parseSse, readUntil, recordsOf } from "../../support/test-server.ts";

let store: SqliteStore;
let runtime: Runtime;
let server: ServerHandle;
const gate = new Gate();

beforeAll(async () => {
  // Retention 0: the next sweep after a settlement folds it (the test sweeps by hand).
  store = openSqliteStore({ path: ":memory:", deltaRetentionMs: 0 });
  runtime = createRuntime({
    agents: { assistant: { initialize: () => ({ ...gatedLocalModel(gate), tools: [clockTool()] }) } },
    store,
    flushPolicy: { bytes: 0, intervalMs: 0 },
    sweepIntervalMs: 3_600_000,
    onObserverError: () => {},
  });
  await runtime.start();
  server = await serve(runtime, { port: 0, hostname: "127.0.0.1", log: () => {} });
});
afterAll(async () => {
  gate.release();
  await server?.close();
  await runtime?.close();
});

const text = (records: ConversationRecord[]) => MessageView.of(records).assistantText();

describe("SSE after lean history folded the deltas", () => {
  it("a reader resuming from a folded delta id continues with the next record: no gap, no duplicate, the same text", async () => {
    gate.close();
    const res = await fetch(`${server.url}/agents/assistant/folded`, { method: "POST", body: JSON.stringify({ kind: "user", body: "[hold] tell me about folding history" }) });
    expect(res.status).toBe(202);
    const { submissionId, conversationId } = (await res.json()) as { submissionId: string; conversationId: string };
    await gate.entered();
    const live = readUntil(await fetch(`${server.url}/agents/assistant/folded`), (frames) => frames.some((f) => f.event === "submission_settled"));
    gate.release();
    const seen = recordsOf((await live).frames);
    await runtime.wait(submissionId);
    const deltas = seen.filter(isStreamingDelta);
    expect(deltas.length, "the live reader got the reply in many deltas").toBeGreaterThan(3);

    expect((await runtime.sweep()).deltasFolded).toBe(deltas.length);
    const folded = await store.readRecords(conversationId);
    expect(folded.some(isStreamingDelta)).toBe(false);

    // A reader that had got as far as a delta in the middle of the reply, reconnecting now.
    const cut = deltas[Math.floor(deltas.length / 2)]!;
    const resumed = recordsOf(parseSse(await (await fetch(`${server.url}/agents/assistant/folded`, { headers: { "Last-Event-ID": cut.id } })).text()));
    expect(resumed, "the records after the folded id, as stored now").toEqual(folded.filter((r) => r.id > cut.id));
    expect(resumed[0]!.id > cut.id).toBe(true);
    const shown = [...seen.filter((r) => r.id <= cut.id), ...resumed];
    expect(new Set(shown.map((r) => r.id)).size, "no record twice").toBe(shown.length);
    expect(shown.filter((r) => !isStreamingDelta(r)), "no record missing").toEqual(seen.filter((r) => !isStreamingDelta(r)));
    expect(text(shown), "the same reply on screen").toBe(text(seen));
    expect(text(seen).length).toBeGreaterThan(10);

    // A fresh replay of the settled conversation: the completed messages, the same text.
    const replay = recordsOf(parseSse(await (await fetch(`${server.url}/agents/assistant/folded`)).text()));
    expect(replay).toEqual(folded);
    expect(text(replay)).toBe(text(seen));
  });
});
