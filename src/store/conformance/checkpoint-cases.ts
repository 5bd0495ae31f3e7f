/**
 * Conformance cases of log checkpoints (ADR 0018): the store keeps the newest checkpoint of a
 * conversation, and a rebuild from it and the log after it equals a rebuild from the whole log,
 * over random logs written through the store (compactions, dangling tool calls, several
 * attempts, submissions still running).
 */
import { describe, expect } from "vitest";
import { checkpointOf, isStreamingDelta, viewFrom, wholeLogView, type LogCheckpoint, type LogView } from "../../conversation/checkpoint.ts";
import type { ConversationRecord } from "../../protocol/records.ts";
import type { DispatchMessage } from "../submission.ts";
import { planCompaction } from "../../drive/compaction-plan.ts";
import { projectPath } from "../../drive/projection.ts";
import { rebuild } from "../../drive/rebuild.ts";
import { submissionUsage } from "../../drive/submission-usage.ts";
import type { ConversationStore } from "../store.ts";
import type { CaseBody } from "./case-context.ts";
import { randomLog, seededRandom } from "./random-log.ts";

type Register = (name: string, body: CaseBody) => void;

const INPUT: DispatchMessage = { kind: "user", body: "the input" };

/** Asserts that rebuilding `submissionId` from `view` gives what rebuilding it from the whole log `full` gives. */
export function expectSameRebuild(full: readonly ConversationRecord[], view: LogView, submissionId: string, what: string): void {
  const a = rebuild(full, submissionId, INPUT);
  const b = rebuild(view.records, submissionId, INPUT, view.earlier);
  const plain = (path: readonly ConversationRecord[]) => path.filter((r) => !isStreamingDelta(r));
  expect(plain(b.path), `${what}: the active path (streaming deltas aside)`).toEqual(plain(a.path));
  expect(b.missing, `${what}: what is appended before the run`).toEqual(a.missing);
  expect(b.dangling, `${what}: dangling tool calls`).toEqual(a.dangling);
  expect(b.corrections, `${what}: corrections`).toBe(a.corrections);
  expect(b.turns, `${what}: turns`).toBe(a.turns);
  const options = { systemPrompt: "system" };
  expect(projectPath(b.path, options), `${what}: the projected transcript`).toEqual(projectPath(a.path, options));
  const plan = (path: readonly ConversationRecord[]) => {
    const p = planCompaction(path, { keepRecentTokens: 8, manual: true });
    return p && { ...p, summarized: plain(p.summarized) };
  };
  expect(plan(b.path), `${what}: the compaction plan`).toEqual(plan(a.path));
  expect(submissionUsage([...view.earlier, ...view.records], submissionId), `${what}: usage`).toEqual(submissionUsage(full, submissionId));
}

/** Submissions with records and no settlement record in `log`. */
export function unsettledIn(log: readonly ConversationRecord[]): string[] {
  const seen = new Set<string>();
  const settled = new Set<string>();
  for (const r of log) {
    if (r.submissionId === undefined) continue;
    seen.add(r.submissionId);
    if (r.kind === "submission_settled") settled.add(r.submissionId);
  }
  return [...seen].filter((id) => !settled.has(id));
}

/**
 * Writes a random log through `store`, and at random points rebuilds the way a worker does (the
 * stored checkpoint and the log after it, or the whole log when there is none or it cannot be
 * used), compares each running submission's rebuild with the whole log's, and stores the view's
 * checkpoint. Returns how many rebuilds started from a checkpoint and how many fell back.
 */
export async function checkpointProperty(
  store: Pick<ConversationStore, "appendRecords" | "readRecords" | "readCheckpoint" | "writeCheckpoint">,
  conversationId: string,
  seed: number,
): Promise<{ fromCheckpoint: number; fellBack: number; oddPointers: number }> {
  const random = seededRandom(seed);
  let fromCheckpoint = 0;
  let fellBack = 0;
  const round = async () => {
    const full = await store.readRecords(conversationId, "");
    const stored = await store.readCheckpoint(conversationId);
    let view: LogView | undefined;
    if (stored) {
      view = viewFrom(stored, await store.readRecords(conversationId, stored.at));
      if (view) fromCheckpoint++;
      else fellBack++;
    }
    view ??= wholeLogView(full);
    for (const id of [...unsettledIn(full), "not-yet-run"]) expectSameRebuild(full, view, id, `seed ${seed}, ${full.length} records, ${id}`);
    if (full.length > 0 && random() < 0.7) await store.writeCheckpoint(conversationId, checkpointOf(view, full.at(-1)!.id));
  };
  const log = await randomLog(random, {
    conversationId,
    session: "default",
    append: async (drafts) => {
      const out = await store.appendRecords(conversationId, drafts);
      if (random() < 0.12) await round();
      return out;
    },
  });
  await round();
  return { fromCheckpoint, fellBack, oddPointers: log.oddPointers };
}

export function checkpointCases(test: Register): void {
  describe("log checkpoints", () => {
    test("CheckpointKeepsTheNewest", async ({ store, fx }) => {
      const conv = await fx.conversation(fx.key());
      expect(await store.readCheckpoint(conv), "no checkpoint yet").toBeUndefined();
      const [a, b, c] = await store.appendRecords(conv, [fx.draft(conv, "a"), fx.draft(conv, "b"), fx.draft(conv, "c")]);
      const at = (record: ConversationRecord, path: ConversationRecord[]): LogCheckpoint => ({ at: record.id, path, open: [] });
      await store.writeCheckpoint(conv, at(b!, [a!, b!]));
      expect(await store.readCheckpoint(conv), "the stored checkpoint").toEqual(at(b!, [a!, b!]));
      await store.writeCheckpoint(conv, at(a!, [a!]));
      expect(await store.readCheckpoint(conv), "an older one does not replace it").toEqual(at(b!, [a!, b!]));
      await store.writeCheckpoint(conv, at(c!, [c!]));
      const read = await store.readCheckpoint(conv);
      expect(read, "a newer one does").toEqual(at(c!, [c!]));
      read!.path.length = 0;
      expect(await store.readCheckpoint(conv), "a returned checkpoint is a copy").toEqual(at(c!, [c!]));
      expect(await store.readCheckpoint("no-such-conversation"), "unknown conversation").toBeUndefined();
    });

    test("CheckpointRebuildEqualsWholeLogRebuild", async ({ store, fx }) => {
      let fromCheckpoint = 0;
      let fellBack = 0;
      let odd = 0;
      for (let seed = 1; seed <= 10; seed++) {
        const ran = await checkpointProperty(store, await fx.conversation(fx.key()), seed);
        fromCheckpoint += ran.fromCheckpoint;
        fellBack += ran.fellBack;
        odd += ran.oddPointers;
      }
      expect(fromCheckpoint, "rebuilds that started from a checkpoint").toBeGreaterThan(10);
      if (odd === 0) expect(fellBack, "fallbacks without an odd compaction pointer").toBe(0);
    });
  });
}
