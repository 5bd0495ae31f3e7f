import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { activeLeafPath, reduce, type ConversationTree } from "../../../src/conversation/reducer.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { idAt, logArb, rec, stepArb, buildLog } from "./fixtures.ts";

const parents = (tree: ConversationTree): string[] => tree.entries.map((e) => e.parentId);
const ids = (records: readonly ConversationRecord[]): string[] => records.map((r) => r.id);

/** The kept entry id a compaction re-parents, if it names an entry already seen in `log[:i]`. */
function reparentTarget(log: readonly ConversationRecord[], i: number): string | undefined {
  const r = log[i]!;
  if (r.kind !== "compaction") return undefined;
  const kept = r.payload.firstKeptEntryId;
  return kept !== undefined && log.slice(0, i).some((x) => x.id === kept) ? kept : undefined;
}

describe("reduce", () => {
  it("chains plain records onto the leaf", () => {
    const log = [
      rec("a", "user_message", { body: "hi" }),
      rec("b", "assistant_message_started", { model: "m", messageType: "message" }),
      rec("c", "assistant_message_completed", { message: { role: "assistant", type: "message" } }),
    ];
    const tree = reduce(log);
    expect(parents(tree)).toEqual(["", "a", "b"]);
    expect(tree.leafId).toBe("c");
    expect(ids(activeLeafPath(tree))).toEqual(["a", "b", "c"]);
  });

  it("an empty log has no leaf and an empty path", () => {
    const tree = reduce([]);
    expect(tree.entries).toEqual([]);
    expect(tree.leafId).toBe("");
    expect(activeLeafPath(tree)).toEqual([]);
  });

  it("a compaction with a kept pointer becomes a root, adopts the kept entry and leaves the leaf alone", () => {
    const log = [
      rec("a", "user_message", { body: "one" }),
      rec("b", "assistant_message_completed", { message: { role: "assistant", type: "message" } }),
      rec("c", "user_message", { body: "two" }),
      rec("d", "assistant_message_completed", { message: { role: "assistant", type: "message" } }),
      rec("s", "compaction", { summary: "one/two", firstKeptEntryId: "c", startIdx: 0, endIdx: 2 }),
      rec("e", "user_message", { body: "three" }),
    ];
    const tree = reduce(log);
    expect(parents(tree)).toEqual(["", "a", "s", "c", "", "d"]);
    expect(tree.leafId).toBe("e");
    expect(ids(activeLeafPath(tree))).toEqual(["s", "c", "d", "e"]);
    // The summarized history is still in the tree, as an abandoned branch.
    expect(ids(tree.entries.map((e) => e.record))).toEqual(ids(log));
  });

  it("repeated compactions re-root incrementally", () => {
    const log = [
      rec("a", "user_message", { body: "one" }),
      rec("b", "user_message", { body: "two" }),
      rec("s1", "compaction", { summary: "one", firstKeptEntryId: "b", startIdx: 0, endIdx: 1 }),
      rec("c", "user_message", { body: "three" }),
      rec("s2", "compaction", { summary: "s1+two", firstKeptEntryId: "c", startIdx: 0, endIdx: 2 }),
      rec("d", "user_message", { body: "four" }),
    ];
    const tree = reduce(log);
    expect(ids(activeLeafPath(tree))).toEqual(["s2", "c", "d"]);
  });

  it("does not mutate its input and returns fresh entries each time", () => {
    const log = [
      rec("a", "user_message", { body: "one" }),
      rec("s", "compaction", { summary: "x", firstKeptEntryId: "a", startIdx: 0, endIdx: 0 }),
    ];
    const snapshot = structuredClone(log);
    const first = reduce(log);
    const second = reduce(log);
    expect(log).toEqual(snapshot);
    expect(first.entries[0]).not.toBe(second.entries[0]);
  });

  it("is deterministic", () => {
    fc.assert(
      fc.property(logArb, (log) => {
        const a = reduce(log);
        const b = reduce(structuredClone(log));
        expect(parents(a)).toEqual(parents(b));
        expect(a.leafId).toBe(b.leafId);
        expect(ids(activeLeafPath(a))).toEqual(ids(activeLeafPath(b)));
      }),
    );
  });

  it("is prefix-consistent: a parent only changes when a later compaction re-parents it", () => {
    fc.assert(
      fc.property(logArb, (log) => {
        let previous = reduce([]);
        for (let n = 1; n <= log.length; n++) {
          const tree = reduce(log.slice(0, n));
          expect(tree.entries.map((e) => e.record)).toEqual(log.slice(0, n));
          const target = reparentTarget(log, n - 1);
          for (let i = 0; i < n - 1; i++) {
            const before = previous.entries[i]!.parentId;
            const after = tree.entries[i]!.parentId;
            if (log[i]!.id === target) expect(after).toBe(log[n - 1]!.id);
            else expect(after).toBe(before);
          }
          previous = tree;
        }
      }),
    );
  });

  it("a compaction re-parents exactly the kept entry", () => {
    fc.assert(
      fc.property(
        fc.array(stepArb, { minLength: 1, maxLength: 60 }),
        fc.nat(),
        (steps, pick) => {
          const prefix = buildLog(steps);
          const kept = prefix[pick % prefix.length]!;
          const compaction = rec("zz-compaction", "compaction", {
            summary: "s",
            firstKeptEntryId: kept.id,
            startIdx: 0,
            endIdx: prefix.length - 1,
          });
          const before = reduce(prefix);
          const after = reduce([...prefix, compaction]);
          expect(after.leafId).toBe(before.leafId);
          expect(after.entries.at(-1)!.parentId).toBe("");
          for (let i = 0; i < prefix.length; i++) {
            const expected = prefix[i]!.id === kept.id ? compaction.id : before.entries[i]!.parentId;
            expect(after.entries[i]!.parentId).toBe(expected);
          }
        },
      ),
    );
  });

  it("a compaction without a known kept pointer chains like any record", () => {
    fc.assert(
      fc.property(
        fc.array(stepArb, { maxLength: 60 }),
        fc.constantFrom<string | undefined>(undefined, "", "no-such-record", idAt(9_999)),
        (steps, pointer) => {
          const prefix = buildLog(steps);
          const compaction = rec("zz-compaction", "compaction", {
            summary: "s",
            ...(pointer === undefined ? {} : { firstKeptEntryId: pointer }),
            startIdx: 0,
            endIdx: 0,
          });
          const before = reduce(prefix);
          const after = reduce([...prefix, compaction]);
          expect(after.leafId).toBe(compaction.id);
          expect(after.entries.at(-1)!.parentId).toBe(before.leafId);
          expect(parents(after).slice(0, -1)).toEqual(parents(before));
          expect(ids(activeLeafPath(after))).toEqual([...ids(activeLeafPath(before)), compaction.id]);
        },
      ),
    );
  });

  it("tolerates a malformed compaction payload from storage", () => {
    const log = [
      rec("a", "user_message", { body: "one" }),
      { ...rec("s", "compaction", { summary: "x", startIdx: 0, endIdx: 0 }), payload: { firstKeptEntryId: 42 } },
      { ...rec("t", "compaction", { summary: "x", startIdx: 0, endIdx: 0 }), payload: undefined },
    ] as ConversationRecord[];
    const tree = reduce(log);
    expect(parents(tree)).toEqual(["", "a", "s"]);
    expect(tree.leafId).toBe("t");
  });

  it("never throws on any interleaving of all kinds, and every entry reaches a root", () => {
    fc.assert(
      fc.property(logArb, (log) => {
        const tree = reduce(log);
        expect(tree.entries).toHaveLength(log.length);
        for (const entry of tree.entries) {
          // Walk to a root; a cycle or a dangling parent fails the bound or the lookup.
          let id = entry.record.id;
          let steps = 0;
          while (id !== "") {
            const at = tree.index.get(id);
            expect(at).toBeDefined();
            id = at!.parentId;
            expect(++steps).toBeLessThanOrEqual(log.length);
          }
        }
        const path = activeLeafPath(tree);
        if (log.length === 0) expect(path).toEqual([]);
        else {
          expect(path.at(-1)!.id).toBe(tree.leafId);
          expect(tree.index.get(path[0]!.id)!.parentId).toBe("");
          for (let i = 1; i < path.length; i++) {
            expect(tree.index.get(path[i]!.id)!.parentId).toBe(path[i - 1]!.id);
          }
        }
      }),
    );
  });

  it("reduces a long log in linear time", () => {
    const log: ConversationRecord[] = [];
    for (let i = 0; i < 50_000; i++) {
      const id = idAt(i);
      if (i % 1_000 === 999) {
        log.push(rec(id, "compaction", { summary: "s", firstKeptEntryId: idAt(i - 10), startIdx: 0, endIdx: i }));
      } else log.push(rec(id, "user_message", { body: "x" }));
    }
    const started = performance.now();
    const tree = reduce(log);
    const path = activeLeafPath(tree);
    // Generous for a loaded CI box; a quadratic reducer would take minutes here.
    expect(performance.now() - started).toBeLessThan(5_000);
    // The last compaction (record 49999) kept record 49989; the leaf is still record 49998.
    expect(ids(path)).toEqual([idAt(49_999), ...Array.from({ length: 10 }, (_, k) => idAt(49_989 + k))]);
  });
});
