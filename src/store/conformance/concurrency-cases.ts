/**
 * Conformance cases under concurrency: racing writers, racing claims, a reader tailing the log
 * while others append, steers racing drains. No case relies on timing: operations are started
 * together and the outcome is checked against the final durable state.
 */
import { setImmediate as yieldToLoop } from "node:timers/promises";
import { describe, expect } from "vitest";
import { newId } from "../../conversation/ids.ts";
import type { ConversationRecord, RecordDraft } from "../../protocol/records.ts";
import { isHarnessError } from "../../errors.ts";
import type { Store } from "../store.ts";
import { type CaseBody, expectStrictlyIncreasing, ids, LEASE_MS } from "./case-context.ts";

type Register = (name: string, body: CaseBody) => void;

function textOf(rec: ConversationRecord): string {
  return (rec.payload as { text?: string; body?: string }).text ?? (rec.payload as { body: string }).body;
}

function isClaimLost(err: unknown): boolean {
  return isHarnessError(err, "claim_lost") || (err as { code?: unknown } | null)?.code === "claim_lost";
}

/** Asserts that every batch (texts `label.0 … label.n-1`) sits contiguous and in order in `log`. */
function expectBatchesContiguous(log: ConversationRecord[], batches: Map<string, number>, what: string): void {
  const texts = log.map(textOf);
  for (const [label, size] of batches) {
    const at = texts.indexOf(`${label}.0`);
    if (at < 0) expect.fail(`${what}: batch ${label} is missing from the log`);
    const got = texts.slice(at, at + size);
    const want = Array.from({ length: size }, (_, j) => `${label}.${j}`);
    expect(got, `${what}: batch ${label} is contiguous and in order`).toEqual(want);
  }
  expect(log.length, `${what}: log holds exactly the batches`).toBe([...batches.values()].reduce((a, b) => a + b, 0));
}

/** Asserts that `got` is exactly `want` (ids), explaining skips, repeats and reordering. */
function expectSameIds(got: readonly { id: string }[], want: readonly { id: string }[], what: string): void {
  const g = ids(got);
  const w = ids(want);
  if (g.length === w.length && g.every((id, i) => id === w[i])) return;
  const seen = new Set(g);
  const skipped = w.filter((id) => !seen.has(id));
  const repeated = g.filter((id, i) => g.indexOf(id) !== i);
  const firstDiff = g.findIndex((id, i) => id !== w[i]);
  expect.fail(
    `${what}: read ${g.length} records, the log has ${w.length}; ` +
      `skipped ${skipped.length}${skipped.length > 0 ? ` (first: #${w.indexOf(skipped[0]!)} ${skipped[0]})` : ""}, ` +
      `repeated ${repeated.length}, first difference at position ${firstDiff}`,
  );
}

/** Appends with `expectedHead`, re-reading the head and retrying on `ClaimLost`. */
async function appendAtHead(store: Store, conv: string, make: () => RecordDraft[]): Promise<ConversationRecord[]> {
  for (let attempt = 0; attempt < 1_000; attempt++) {
    const log = await store.readRecords(conv, "");
    const head = log.length === 0 ? "" : log[log.length - 1]!.id;
    try {
      return await store.appendRecords(conv, make(), { expectedHead: head });
    } catch (err) {
      if (!isClaimLost(err)) throw err;
    }
  }
  return expect.fail("an expectedHead append kept losing 1000 times in a row");
}

export function concurrencyCases(test: Register): void {
  describe("concurrency", () => {
    test("ConcurrentAppendsNeverInterleave", async ({ store, fx }) => {
      const conv = await fx.conversation(fx.key());
      const batches = new Map<string, number>();
      const returned: ConversationRecord[][] = [];
      const writes: Promise<void>[] = [];
      for (const writer of ["A", "B"]) {
        for (let i = 0; i < 25; i++) {
          const label = `${writer}${i}`;
          const size = 1 + (i % 3);
          batches.set(label, size);
          const drafts = Array.from({ length: size }, (_, j) => fx.draft(conv, `${label}.${j}`));
          writes.push(store.appendRecords(conv, drafts).then((recs) => void returned.push(recs)));
        }
      }
      await Promise.all(writes);
      const log = await store.readRecords(conv, "");
      expectStrictlyIncreasing(log, "log after concurrent appends");
      expect(new Set(ids(log)).size, "no id reused").toBe(log.length);
      expectBatchesContiguous(log, batches, "concurrent appends without expectedHead");
      const byId = new Map(log.map((r) => [r.id, textOf(r)]));
      for (const recs of returned) {
        for (const rec of recs) expect(byId.get(rec.id), `returned record ${rec.id} is the stored one`).toBe(textOf(rec));
      }
    });

    test("ConcurrentExpectedHeadAppendsOneWins", async ({ store, fx }) => {
      const conv = await fx.conversation(fx.key());
      for (let round = 0; round < 10; round++) {
        const head = await fx.head(conv);
        const before = await store.readRecords(conv, "");
        const results = await Promise.allSettled(
          ["A", "B"].map((w) =>
            store.appendRecords(conv, [fx.draft(conv, `${w}${round}.0`), fx.draft(conv, `${w}${round}.1`)], { expectedHead: head }),
          ),
        );
        const won = results.filter((r) => r.status === "fulfilled");
        const lost = results.filter((r) => r.status === "rejected");
        expect(won.length, `round ${round}: exactly one of two writers racing on head "${head}" wins`).toBe(1);
        expect(isClaimLost(lost[0]!.reason), `round ${round}: the loser gets claim_lost (got ${String(lost[0]!.reason)})`).toBe(true);
        const winner = (won[0] as PromiseFulfilledResult<ConversationRecord[]>).value;
        expect(await store.readRecords(conv, ""), `round ${round}: the log holds the winner's batch only`).toEqual([...before, ...winner]);
      }
    });

    test("ConcurrentAppendsAtHeadSerialize", async ({ store, fx }) => {
      const conv = await fx.conversation(fx.key());
      const batches = new Map<string, number>();
      const writer = async (name: string) => {
        const mine: string[] = [];
        for (let i = 0; i < 15; i++) {
          const label = `${name}${i}`;
          batches.set(label, 2);
          const recs = await appendAtHead(store, conv, () => [fx.draft(conv, `${label}.0`), fx.draft(conv, `${label}.1`)]);
          mine.push(...ids(recs));
        }
        return mine;
      };
      const [a, b] = await Promise.all([writer("A"), writer("B")]);
      const log = await store.readRecords(conv, "");
      expectStrictlyIncreasing(log, "log after racing expectedHead writers");
      expectBatchesContiguous(log, batches, "racing expectedHead writers");
      const logIds = ids(log);
      expect(logIds.filter((id) => a!.includes(id)), "writer A's records in its own order").toEqual(a);
      expect(logIds.filter((id) => b!.includes(id)), "writer B's records in its own order").toEqual(b);
    });

    test("TailingReaderNeverSkips", async ({ store, fx }) => {
      const conv = await fx.conversation(fx.key());
      let writing = true;
      const writer = async (name: string) => {
        for (let i = 0; i < 30; i++) {
          const size = 1 + (i % 3);
          await store.appendRecords(conv, Array.from({ length: size }, (_, j) => fx.draft(conv, `${name}${i}.${j}`)));
        }
      };
      const reader = async (limit?: number) => {
        const seen: ConversationRecord[] = [];
        let after = "";
        const poll = async () => {
          const got = await store.readRecords(conv, after, limit);
          seen.push(...got);
          if (got.length > 0) after = got[got.length - 1]!.id;
          return got.length;
        };
        while (writing) {
          await poll();
          await yieldToLoop(); // a turn of the event loop, not a timed sleep
        }
        while ((await poll()) > 0);
        return seen;
      };
      const readers = [reader(), reader(2)];
      await Promise.all([writer("A"), writer("B")]);
      writing = false;
      const [plain, paged] = await Promise.all(readers);
      const log = await store.readRecords(conv, "");
      expect(log.length).toBe(2 * (10 * 1 + 10 * 2 + 10 * 3));
      expectSameIds(plain!, log, "a tailing reader sees every record exactly once, in log order");
      expectSameIds(paged!, log, "a tailing reader paging by 2 sees every record exactly once, in log order");
    });

    test("ConcurrentClaimsOneWins", async ({ store, clock, fx }) => {
      for (let round = 0; round < 5; round++) {
        const sub = await fx.admit(fx.key());
        const attempts = [newId(clock.now()), newId(clock.now())];
        const results = await Promise.allSettled(
          attempts.map((attemptId, i) =>
            store.claimSubmission({ submissionId: sub.id, attemptId, ownerId: `owner-${i}`, leaseExpiresAt: clock.now() + LEASE_MS }),
          ),
        );
        const won = results.findIndex((r) => r.status === "fulfilled");
        expect(results.filter((r) => r.status === "fulfilled").length, `round ${round}: exactly one claim wins`).toBe(1);
        const lost = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
        expect(isClaimLost(lost.reason), `round ${round}: the loser gets claim_lost (got ${String(lost.reason)})`).toBe(true);
        const stored = await store.getSubmission(sub.id);
        expect(stored.attemptId, "the stored attempt is the winner's").toBe(attempts[won]);
        expect(stored.attemptCount, "one attempt charged").toBe(1);
      }
    });

    test("ConcurrentSteersAndDrainsLoseNothing", async ({ store, fx }) => {
      const sub = await fx.running();
      const bodies = Array.from({ length: 30 }, (_, i) => `m${i}`);
      let enqueuing = true;
      const enqueuer = async () => {
        for (const [i, body] of bodies.entries()) {
          await store.enqueueInbox(sub.sessionKey, { kind: i % 2 === 0 ? "steer" : "followUp", body });
        }
        enqueuing = false;
      };
      const delivered: ConversationRecord[] = [];
      const drainer = async () => {
        while (enqueuing) {
          delivered.push(...(await store.drainInbox({ submissionId: sub.id, attemptId: sub.attemptId!, kinds: ["steer", "followUp"] })));
          await yieldToLoop();
        }
      };
      await Promise.all([enqueuer(), drainer(), drainer()]);
      delivered.push(...(await store.drainInbox({ submissionId: sub.id, attemptId: sub.attemptId!, kinds: ["steer", "followUp"] })));
      const log = await store.readRecords(sub.conversationId, "");
      expect(log.map(textOf), "every accepted message delivered exactly once, in acceptance order").toEqual(bodies);
      expect(ids(delivered).sort(), "drains returned exactly the appended records").toEqual(ids(log).sort());
      await store.reserveSettlement(sub.id, sub.attemptId!, { requireDrainedInbox: true });
    });
  });
}
