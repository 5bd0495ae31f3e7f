import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/ports/clock.ts";
import { frozenCopy } from "../../../src/memory/frozen-copy.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { jsonEqual } from "../../../src/memory/json-equal.ts";
import { describeStoreConformance } from "../../../src/store/conformance/index.ts";

describeStoreConformance("memory", async (clock) => createMemoryStore({ clock }));

describe("memory store specifics", () => {
  const key = { agent: "a", instance: "i", session: "default" };

  it("hands out records as frozen values, and keeps the caller's drafts unfrozen", async () => {
    const store = createMemoryStore({ clock: new ManualClock() });
    const draft = {
      kind: "tool_outcome" as const,
      conversationId: "c",
      session: "default",
      time: "2026-01-01T00:00:00.000Z",
      payload: { callId: "x", toolName: "t", data: { list: [1, { deep: true }] } },
    };
    const [rec] = await store.appendRecords("c", [draft]);
    expect(Object.isFrozen(rec)).toBe(true);
    expect(Object.isFrozen((rec!.payload as typeof draft.payload).data.list[1])).toBe(true);
    expect(Object.isFrozen(draft.payload.data)).toBe(false);
    const [read] = await store.readRecords("c");
    expect(read).toBe(rec); // shared, not re-copied on read
  });

  it("treats key order and undefined-valued properties of an input as the same dispatch", async () => {
    const store = createMemoryStore({ clock: new ManualClock() });
    const base = { id: "s", conversationId: "c", sessionKey: key, createdAt: 0 };
    await store.admitSubmission({ ...base, input: { kind: "user", body: "b", resultRetries: 1 } });
    const replay = (await store.admitSubmission({
      ...base,
      input: { resultRetries: 1, body: "b", kind: "user", resultSchema: undefined },
    })).submission;
    expect(replay.id).toBe("s");
  });

  it("jsonEqual compares structure, not identity", () => {
    expect(jsonEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toBe(true);
    expect(jsonEqual({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
    expect(jsonEqual({ a: 1 }, { a: 1, b: null })).toBe(false);
    expect(jsonEqual([], {})).toBe(false);
    expect(jsonEqual(null, {})).toBe(false);
  });

  it("frozenCopy copies typed arrays and non-plain objects", () => {
    const bytes = new Uint8Array([1, 2]);
    const when = new Date(0);
    const out = frozenCopy({ bytes, when, nested: [{ x: 1 }] });
    expect(out.bytes).not.toBe(bytes);
    expect(Array.from(out.bytes)).toEqual([1, 2]);
    expect(out.when).not.toBe(when);
    expect(out.when.getTime()).toBe(0);
    expect(Object.isFrozen(out.nested[0])).toBe(true);
  });
});
