/**
 * The forced race of a copy (import, fork) with a dispatch into its target session (issue 33),
 * for any store: see test/unit/engine/conversation-copy.test.ts.
 */
import { expect, it } from "vitest";
import { scriptedModel } from "../../src/agent/scripted-model.ts";
import { EXPORT_VERSION } from "../../src/protocol/conversation-export.ts";
import type { ConversationRecord } from "../../src/protocol/records.ts";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import type { AppendOptions, Store } from "../../src/store/store.ts";

/** An export of `n` records: `conversation_created`, then user messages and replies. */
export function exportOf(n: number): string {
  const id = (i: number) => `01J${String(i).padStart(23, "0")}`;
  const lines = [JSON.stringify({ type: "conversation", version: EXPORT_VERSION, agent: "chat", instance: "src", session: "default", conversationId: "c", createdAt: 0 })];
  for (let i = 0; i < n; i++) {
    const payload = i === 0 ? { agent: "chat", instance: "src", session: "default" } : { body: `copied ${i}` };
    lines.push(JSON.stringify({ type: "record", record: { id: id(i), kind: i === 0 ? "conversation_created" : "user_message", conversationId: "c", session: "default", time: "2026-01-01T00:00:00.000Z", payload } }));
  }
  lines.push(JSON.stringify({ type: "end", records: n, attachments: 0 }));
  return `${lines.join("\n")}\n`;
}

/**
 * The store with a pause after a copied append: `take()` hands out the pause armed since the last
 * one (once), which runs there before the copy goes on. Everything else passes through.
 */
function pausingCopies(store: Store, take: () => (() => Promise<void>) | undefined): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === "appendRecords") {
        return async (conversationId: string, drafts: Parameters<Store["appendRecords"]>[1], options?: AppendOptions) => {
          const records = await target.appendRecords(conversationId, drafts, options);
          const during = options?.copied === true ? take() : undefined;
          if (during !== undefined) await during();
          return records;
        };
      }
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

const COPIED = 250;

/** The race's cases, for a store made by `make` (disposed after each case). */
export function copyRaceCases(make: () => Promise<{ store: Store; dispose: () => Promise<void> }>): void {
  async function withRuntime(run: (store: Store, runtime: () => Runtime, setDuring: (f: () => Promise<void>) => void) => Promise<void>) {
    const { store, dispose } = await make();
    let armed: (() => Promise<void>) | undefined;
    const model = scriptedModel(Array.from({ length: 6 }, () => [{ text: "answered" }]));
    const runtime = createRuntime({
      agents: { chat: { initialize: () => ({ model: model.model, streamFn: model.streamFn }) } },
      store: pausingCopies(store, () => {
        const during = armed;
        armed = undefined;
        return during;
      }),
      flushPolicy: { bytes: 0, intervalMs: 0 },
      onObserverError: () => {},
    });
    await runtime.start();
    try {
      await run(store, () => runtime, (f) => (armed = f));
    } finally {
      await runtime.close();
      await dispose();
    }
  }
  const target = { agent: "chat", instance: "dst", session: "default" };
  const bodies = (records: ConversationRecord[]) => records.filter((r) => r.kind === "user_message").map((r) => (r.kind === "user_message" ? r.payload.body : ""));

  it("an import paused midway while a dispatch into its session runs and settles: the session holds the dispatch's conversation alone, the import is refused 409", async () => {
    await withRuntime(async (store, runtime, setDuring) => {
      let dispatched: { submissionId: string; conversationId: string } | undefined;
      setDuring(async () => {
        dispatched = await runtime().dispatch({ ...target, message: { kind: "user", body: "meanwhile" } });
        expect((await runtime().wait(dispatched.submissionId)).status).toBe("succeeded");
      });
      await expect(runtime().importConversation(target, exportOf(COPIED))).rejects.toMatchObject({ code: "conversation_exists" });
      expect(dispatched).toBeDefined();
      const conversation = await store.getConversation(target);
      expect(conversation.id).toBe(dispatched!.conversationId);
      const records = await store.readRecords(conversation.id);
      // Not one copied record in it: the dispatch's run alone, from its conversation_created.
      expect(bodies(records)).toEqual(["meanwhile"]);
      expect(records[0]!.kind).toBe("conversation_created");
      expect(records.at(-1)!.kind).toBe("submission_settled");
    });
  });

  it("a fork paused midway while a dispatch into its target runs: the same, and the source untouched", async () => {
    await withRuntime(async (store, runtime, setDuring) => {
      const imported = await runtime().importConversation({ agent: "chat", instance: "src" }, exportOf(COPIED));
      const source = await store.readRecords(imported.conversationId);
      let dispatched: { submissionId: string; conversationId: string } | undefined;
      setDuring(async () => {
        dispatched = await runtime().dispatch({ ...target, session: "forked", message: { kind: "user", body: "meanwhile" } });
        expect((await runtime().wait(dispatched.submissionId)).status).toBe("succeeded");
      });
      await expect(
        runtime().fork({ agent: "chat", instance: "src", fromRecordId: source.at(-1)!.id, targetInstance: "dst", targetSession: "forked" }),
      ).rejects.toMatchObject({ code: "conversation_exists" });
      const conversation = await store.getConversation({ ...target, session: "forked" });
      expect(conversation.id).toBe(dispatched!.conversationId);
      expect(bodies(await store.readRecords(conversation.id))).toEqual(["meanwhile"]);
      expect(await store.readRecords(imported.conversationId)).toEqual(source);
    });
  });

  it("a dispatch after the copy (or a stream, or another copy during it) finds the copy whole; until then the session has no conversation", async () => {
    await withRuntime(async (store, runtime, setDuring) => {
      setDuring(async () => {
        // Half written: no conversation for the session, nothing to read.
        await expect(store.getConversation(target)).rejects.toMatchObject({ code: "conversation_not_found" });
      });
      const imported = await runtime().importConversation(target, exportOf(COPIED));
      expect(imported.records).toBe(COPIED);
      const admitted = await runtime().dispatch({ ...target, message: { kind: "user", body: "after" } });
      expect(admitted.conversationId).toBe(imported.conversationId);
      expect((await runtime().wait(admitted.submissionId)).status).toBe("succeeded");
      const records = await store.readRecords(imported.conversationId);
      expect(bodies(records)).toEqual([...Array.from({ length: COPIED - 1 }, (_, i) => `copied ${i + 1}`), "after"]);
      expect(records.slice(0, COPIED).every((r) => r.submissionId === undefined)).toBe(true);
    });
  });
}
