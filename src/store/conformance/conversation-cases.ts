/**
 * Conformance cases of the ConversationStore and AttachmentStore: ensure/get, append and read
 * from an offset, id order, conditional appends (expected head, fence), paging, large payloads,
 * copies (spec §1.10.2–§1.10.4 cases 16–18).
 */
import { createHash } from "node:crypto";
import { describe, expect } from "vitest";
import { newId } from "../../conversation/ids.ts";
import type { ConversationRecord, RecordDraft } from "../../protocol/records.ts";
import type { Store } from "../store.ts";
import { type CaseBody, expectCode, expectStrictlyIncreasing, ids, tryMutate } from "./case-context.ts";

type Register = (name: string, body: CaseBody) => void;

/** A string of exactly `bytes` UTF-8 bytes mixing one- to four-byte characters. */
export function textOfBytes(bytes: number): string {
  const unit = "abcdefghij0123456789 é€😀\n"; // 1-, 2-, 3- and 4-byte characters
  const unitBytes = Buffer.byteLength(unit);
  let text = unit.repeat(Math.floor(bytes / unitBytes));
  return text + "x".repeat(bytes - Buffer.byteLength(text));
}

/** Reads the whole log and asserts it equals `expected` (ids and content). */
async function expectLog(store: Store, conversationId: string, expected: ConversationRecord[], what: string) {
  const log = await store.readRecords(conversationId, "");
  expect(ids(log), `${what}: record ids`).toEqual(ids(expected));
  expect(log, `${what}: records`).toEqual(expected);
}

export function conversationCases(test: Register): void {
  describe("conversations", () => {
    test("ConversationEnsureAndGet", async ({ store, clock, fx }) => {
      const key = fx.key();
      await expectCode(store.getConversation(key), "conversation_not_found", "getConversation before any ensure");
      const candidate = { id: newId(clock.now()), key, createdAt: clock.now() };
      const first = await store.ensureConversation(candidate);
      expect(first.created, "the first ensure creates").toBe(true);
      expect(first.conversation, "the created conversation is the candidate").toEqual(candidate);

      await clock.advance(1_000);
      const second = await store.ensureConversation({ id: newId(clock.now()), key: { ...key }, createdAt: clock.now() });
      expect(second.created, "a second ensure does not create").toBe(false);
      expect(second.conversation, "a second ensure returns the existing conversation").toEqual(candidate);
      expect(await store.getConversation({ ...key }), "get returns it").toEqual(candidate);
      await expectCode(
        store.getConversation({ ...key, session: "another" }),
        "conversation_not_found",
        "getConversation of a sibling session",
      );
    });

    test("ConversationKeysAreExact", async ({ store, clock, fx }) => {
      const base = fx.key();
      // Joined with "/" these would all read "agent/x/<instance>/s": keys must not be joined naively.
      const keys = [
        { agent: `${base.agent}/x`, instance: base.instance, session: "s" },
        { agent: base.agent, instance: `x/${base.instance}`, session: "s" },
        { agent: base.agent, instance: "x", session: `${base.instance}/s` },
        { agent: base.agent, instance: `x:${base.instance}`, session: "s" },
      ];
      const made: string[] = [];
      for (const key of keys) {
        const id = newId(clock.now());
        const { conversation, created } = await store.ensureConversation({ id, key, createdAt: clock.now() });
        expect(created, `key ${JSON.stringify(key)} gets its own conversation`).toBe(true);
        expect(conversation.id).toBe(id);
        made.push(id);
      }
      for (const [i, key] of keys.entries()) {
        expect((await store.getConversation(key)).id, `get ${JSON.stringify(key)}`).toBe(made[i]);
      }
    });
  });

  describe("records", () => {
    test("RecordAppendAndReadFromOffset", async ({ store, fx }) => {
      const conv = await fx.conversation(fx.key());
      const batch1: RecordDraft[] = [
        fx.draft(conv, "one", { submissionId: "sub-1", turnId: "turn-1", attemptId: "att-1" }),
        {
          kind: "assistant_tool_call",
          conversationId: conv,
          session: "default",
          time: new Date(fx.clock.now()).toISOString(),
          payload: { callId: "c1", toolName: "search", args: { q: "x", n: [1, 2, { deep: null }] } },
        },
      ];
      const stored1 = await store.appendRecords(conv, batch1);
      expect(stored1.map(({ id: _id, ...rest }) => rest), "append returns the drafts").toEqual(batch1);
      for (const rec of stored1) expect(typeof rec.id === "string" && rec.id.length > 0, "records get ids").toBe(true);
      const stored2 = await store.appendRecords(conv, [fx.draft(conv, "three")]);
      const all = [...stored1, ...stored2];
      expectStrictlyIncreasing(all, "ids across batches");

      await expectLog(store, conv, all, "full log in append order");
      expect(await store.readRecords(conv), "afterId defaults to the start").toEqual(all);
      expect(await store.readRecords(conv, all[0]!.id), "read after an offset is exclusive").toEqual(all.slice(1));
      expect(await store.readRecords(conv, all[2]!.id), "read after the head").toEqual([]);
      expect(await store.readRecords("no-such-conversation", ""), "unknown conversation → empty").toEqual([]);
    });

    test("RecordIdsStrictlyIncrease", async ({ store, fx }) => {
      const conv = await fx.conversation(fx.key());
      const appended: ConversationRecord[] = [];
      // Same millisecond throughout: ids must still order.
      for (let i = 0; i < 20; i++) appended.push(...(await store.appendRecords(conv, [fx.draft(conv, `single ${i}`)])));
      for (let i = 0; i < 5; i++) {
        const batch = [0, 1, 2, 3].map((j) => fx.draft(conv, `batch ${i}.${j}`));
        appended.push(...(await store.appendRecords(conv, batch)));
      }
      expectStrictlyIncreasing(appended, "ids returned by successive appends");
      const log = await store.readRecords(conv, "");
      expect(ids(log)).toEqual(ids(appended));
      expect(new Set(ids(log)).size, "no id is reused").toBe(log.length);
    });

    test("RecordIdsIncreaseWhenClockGoesBackwards", async ({ store, clock, fx }) => {
      const conv = await fx.conversation(fx.key());
      const start = clock.now();
      const [a] = await store.appendRecords(conv, [fx.draft(conv, "a")]);
      clock.set(start - 3_600_000);
      const [b, c] = await store.appendRecords(conv, [fx.draft(conv, "b"), fx.draft(conv, "c")]);
      clock.set(start - 7_200_000);
      const [d] = await store.appendRecords(conv, [fx.draft(conv, "d")]);
      clock.set(start + 1);
      const [e] = await store.appendRecords(conv, [fx.draft(conv, "e")]);
      expectStrictlyIncreasing([a!, b!, c!, d!, e!], "ids while the clock jumps back and forth");
      expect(ids(await store.readRecords(conv, ""))).toEqual(ids([a!, b!, c!, d!, e!]));
    });

    test("AppendExpectedHeadMismatch", async ({ store, fx }) => {
      const conv = await fx.conversation(fx.key());
      const [first] = await store.appendRecords(conv, [fx.draft(conv, "first")], { expectedHead: "" });
      let log = await store.readRecords(conv, "");
      await expectCode(
        store.appendRecords(conv, [fx.draft(conv, "stale empty")], { expectedHead: "" }),
        "claim_lost",
        'append expecting an empty log ("") after a record landed',
      );
      await expectLog(store, conv, log, "after a refused append");

      const [second] = await store.appendRecords(conv, [fx.draft(conv, "second")], { expectedHead: first!.id });
      log = await store.readRecords(conv, "");
      await expectCode(
        store.appendRecords(conv, [fx.draft(conv, "x"), fx.draft(conv, "y")], { expectedHead: first!.id }),
        "claim_lost",
        "append expecting an older head",
      );
      await expectCode(
        store.appendRecords(conv, [fx.draft(conv, "z")], { expectedHead: `${second!.id}Z` }),
        "claim_lost",
        "append expecting a head that does not exist",
      );
      await expectLog(store, conv, log, "after refused batches (nothing of them written)");
      const [third] = await store.appendRecords(conv, [fx.draft(conv, "third")], { expectedHead: second!.id });
      expect(ids(await store.readRecords(conv, ""))).toEqual(ids([first!, second!, third!]));
    });

    test("AppendFenceRequiresRunningAttempt", async ({ store, fx }) => {
      const sub = await fx.running();
      const conv = sub.conversationId;
      const fence = { submissionId: sub.id, attemptId: sub.attemptId! };
      await store.appendRecords(conv, [fx.draft(conv, "fenced ok")], { fence });
      let log = await store.readRecords(conv, "");

      const refused = async (what: string, f: { submissionId: string; attemptId: string }) => {
        await expectCode(
          store.appendRecords(conv, [fx.draft(conv, `refused: ${what}`), fx.draft(conv, "second of batch")], { fence: f }),
          "claim_lost",
          `fenced append with ${what}`,
        );
        await expectLog(store, conv, log, `log after the fenced append with ${what}`);
      };
      await refused("another attempt id", { submissionId: sub.id, attemptId: "other-attempt" });
      await refused("an unknown submission", { submissionId: "no-such-submission", attemptId: sub.attemptId! });

      await store.releaseSubmission({ submissionId: sub.id, attemptId: sub.attemptId! });
      await refused("a released (queued) submission", fence);
      const next = await fx.claim(sub);
      await refused("the previous attempt after a re-claim", fence);
      const fence2 = { submissionId: sub.id, attemptId: next.attemptId! };
      await store.appendRecords(conv, [fx.draft(conv, "fenced by the new attempt")], {
        fence: fence2,
        expectedHead: log[log.length - 1]!.id,
      });
      log = await store.readRecords(conv, "");

      await store.waitSubmission({ submissionId: sub.id, attemptId: next.attemptId! });
      await refused("a waiting submission", fence2);
      await store.resumeSubmission(sub.id);
      const third = await fx.claim(sub);
      await store.reserveSettlement(sub.id, third.attemptId!);
      await refused("a terminalizing submission", { submissionId: sub.id, attemptId: third.attemptId! });
      await store.finalizeSettlement(sub.id);
      await refused("a settled submission", { submissionId: sub.id, attemptId: third.attemptId! });

      const other = await fx.running();
      await refused("another running submission's fence", { submissionId: other.id, attemptId: sub.attemptId! });
      // Both conditions at once: a good fence with a stale head still fails.
      const fresh = await fx.running(sub.sessionKey);
      await expectCode(
        store.appendRecords(conv, [fx.draft(conv, "x")], {
          fence: { submissionId: fresh.id, attemptId: fresh.attemptId! },
          expectedHead: "",
        }),
        "claim_lost",
        "a good fence with a stale expected head",
      );
      await expectLog(store, conv, log, "after a good fence with a stale head");
    });

    test("SettlementRecordOncePerSubmission", async ({ store, fx }) => {
      // A settler that stalled past the grace must not add a second, contradicting outcome
      // after a recoverer settled the submission (and the next one ran).
      const sub = await fx.running();
      const conv = sub.conversationId;
      await store.reserveSettlement(sub.id, sub.attemptId!);
      const settled = (status: "succeeded" | "failed") =>
        fx.draft(conv, "", { kind: "submission_settled", submissionId: sub.id, payload: { status } } as Partial<RecordDraft>);
      await store.appendRecords(conv, [settled("failed")]);
      const log = await store.readRecords(conv, "");
      await expectCode(store.appendRecords(conv, [settled("succeeded")]), "claim_lost", "a second submission_settled of one submission");
      await store.finalizeSettlement(sub.id);
      await store.appendRecords(conv, [fx.draft(conv, "the next submission's record")]);
      const later = await store.readRecords(conv, "");
      await expectCode(
        store.appendRecords(conv, [fx.draft(conv, "with it"), settled("succeeded")]),
        "claim_lost",
        "a second submission_settled after later records",
      );
      await expectLog(store, conv, later, "after the refused second settlements");
      expect(log.filter((r) => r.kind === "submission_settled"), "one settlement record").toHaveLength(1);
      const other = await fx.running(sub.sessionKey);
      await store.reserveSettlement(other.id, other.attemptId!);
      await store.appendRecords(conv, [fx.draft(conv, "", { kind: "submission_settled", submissionId: other.id, payload: { status: "succeeded" } } as Partial<RecordDraft>)]);
      expect((await store.readRecords(conv, "")).filter((r) => r.kind === "submission_settled"), "another submission settles").toHaveLength(2);
    });

    test("ReadRecordsLimitPages", async ({ store, fx }) => {
      const conv = await fx.conversation(fx.key());
      const all: ConversationRecord[] = [];
      for (const size of [1, 4, 2, 3]) {
        all.push(...(await store.appendRecords(conv, Array.from({ length: size }, (_, i) => fx.draft(conv, `${size}.${i}`)))));
      }
      const pages: ConversationRecord[][] = [];
      let after = "";
      for (let guard = 0; guard < 20; guard++) {
        const page = await store.readRecords(conv, after, 3);
        if (page.length === 0) break;
        expect(page.length, "a page holds at most `limit` records").toBeLessThanOrEqual(3);
        pages.push(page);
        after = page[page.length - 1]!.id;
      }
      expect(pages.map((p) => p.length), "pages of 3 over 10 records").toEqual([3, 3, 3, 1]);
      expect(pages.flat(), "pages concatenate to the log").toEqual(all);
      expect(await store.readRecords(conv, all[7]!.id, 100), "a limit beyond the end returns the rest").toEqual(all.slice(8));
      expect(await store.readRecords(conv, "", 1), "limit 1 from the start").toEqual(all.slice(0, 1));
    });

    test("LargePayloadRoundTrip", async ({ store, fx, options }) => {
      const sub = await fx.running();
      const conv = sub.conversationId;
      const big = textOfBytes(options.largePayloadBytes);
      const bigDraft: RecordDraft = {
        kind: "tool_outcome",
        conversationId: conv,
        session: sub.sessionKey.session,
        submissionId: sub.id,
        attemptId: sub.attemptId,
        time: new Date(fx.clock.now()).toISOString(),
        payload: { callId: "c1", toolName: "dump", content: [{ type: "text", text: big }], data: { note: "ok" } },
      };
      const [before, stored, after] = await store.appendRecords(
        conv,
        [fx.draft(conv, "before"), bigDraft, fx.draft(conv, "after")],
        { fence: { submissionId: sub.id, attemptId: sub.attemptId! } },
      );
      const sameText = (rec: ConversationRecord | undefined, what: string) => {
        expect(rec?.kind, `${what}: kind`).toBe("tool_outcome");
        const payload = rec!.payload as { content?: { text?: string }[]; data?: unknown; callId?: string };
        const text = payload.content?.[0]?.text;
        const got = typeof text === "string" ? Buffer.byteLength(text) : `a ${typeof text}`;
        // Compare without letting a failure print a megabyte of text.
        expect(text === big, `${what}: payload text round-trips (${options.largePayloadBytes} bytes expected, got ${got})`).toBe(true);
        expect(payload.data, `${what}: the rest of the payload`).toEqual({ note: "ok" });
        expect(payload.callId).toBe("c1");
      };
      sameText(stored, "record returned by append");
      const log = await store.readRecords(conv, "");
      expect(ids(log)).toEqual(ids([before!, stored!, after!]));
      sameText(log[1], "record read from the start");
      sameText((await store.readRecords(conv, before!.id, 1))[0], "record read from an offset with a limit");
      expect((log[2]!.payload as { text: string }).text, "the record after the large one").toBe("after");
    });

    test("ReturnedRecordsAreCopies", async ({ store, fx }) => {
      const conv = await fx.conversation(fx.key());
      const draft: RecordDraft = {
        kind: "assistant_tool_call",
        conversationId: conv,
        session: "default",
        time: new Date(fx.clock.now()).toISOString(),
        payload: { callId: "c1", toolName: "t", args: { list: [1, 2], nested: { a: "b" } } },
      };
      const [returned] = await store.appendRecords(conv, [draft]);
      const snapshot = structuredClone(await store.readRecords(conv, ""));

      draft.conversationId = "mutated";
      draft.payload.toolName = "mutated";
      (draft.payload.args as { list: number[] }).list.push(3);
      const mutate = (rec: ConversationRecord) => {
        tryMutate(() => (rec.id = "mutated"));
        tryMutate(() => (rec.kind = "signal"));
        tryMutate(() => ((rec.payload as { toolName: string }).toolName = "mutated"));
        tryMutate(() => ((rec.payload as { args: { list: number[] } }).args.list.push(4)));
        tryMutate(() => ((rec.payload as { args: { nested: { a: string } } }).args.nested.a = "mutated"));
      };
      mutate(returned!);
      for (const rec of await store.readRecords(conv, "")) mutate(rec);
      const page = await store.readRecords(conv, "");
      tryMutate(() => page.pop());
      expect(await store.readRecords(conv, ""), "stored records after mutating drafts and returned records").toEqual(snapshot);

      const key = fx.key();
      const candidate = { id: newId(fx.clock.now()), key, createdAt: fx.clock.now() };
      const ensured = await store.ensureConversation(candidate);
      const expected = structuredClone(candidate);
      candidate.key.session = "mutated";
      candidate.id = "mutated";
      tryMutate(() => (ensured.conversation.key.agent = "mutated"));
      tryMutate(() => (ensured.conversation.createdAt = 1));
      const got = await store.getConversation(expected.key);
      tryMutate(() => (got.key.instance = "mutated"));
      expect(await store.getConversation(expected.key), "stored conversation after mutating copies").toEqual(expected);
    });
  });

  describe("attachments", () => {
    test("AttachmentPutGet", async ({ store }) => {
      const bytes = new Uint8Array([0, 1, 2, 250, 255, 10, 13]);
      const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
      const ref = await store.putAttachment("application/octet-stream", bytes);
      expect(ref, "the ref of a put").toEqual({ digest, mediaType: "application/octet-stream", size: bytes.length });
      const again = await store.putAttachment("application/octet-stream", new Uint8Array(bytes));
      expect(again.digest, "identical bytes → same digest").toBe(digest);

      const got = await store.getAttachment(digest);
      expect(got.ref).toEqual(ref);
      expect(Array.from(got.data), "bytes round-trip").toEqual(Array.from(bytes));
      await expectCode(
        store.getAttachment(`sha256:${"0".repeat(64)}`),
        "attachment_not_found",
        "getAttachment of an absent digest",
      );
      expect(await store.getAttachmentRef(digest), "the ref alone, without the bytes").toEqual(ref);
      await expectCode(store.getAttachmentRef(`sha256:${"0".repeat(64)}`), "attachment_not_found", "getAttachmentRef of an absent digest");
      await expectCode(store.getAttachmentRef("sha256:not-hex"), "attachment_not_found", "getAttachmentRef of a malformed digest");
    });

    test("AttachmentUploadersAreRowsBesideBytesStoredOnce", async ({ store }) => {
      const bytes = new Uint8Array([7, 7, 7, 1]);
      const mine = await store.putAttachment("image/png", bytes);
      const theirs = await store.putAttachment("image/png", new Uint8Array(bytes));
      expect(theirs, "the same bytes from a second uploader: the same ref, one blob").toEqual(mine);
      const digest = mine.digest;
      expect(await store.isAttachmentUploader(digest, "alice"), "no uploader before one is recorded").toBe(false);
      await store.addAttachmentUploader(digest, "alice");
      expect(await store.isAttachmentUploader(digest, "alice")).toBe(true);
      expect(await store.isAttachmentUploader(digest, "bob"), "an uploader is one principal, not everyone").toBe(false);
      await store.addAttachmentUploader(digest, "bob");
      await store.addAttachmentUploader(digest, "bob");
      expect(await store.isAttachmentUploader(digest, "bob"), "a second row, written twice: idempotent").toBe(true);
      expect(await store.isAttachmentUploader(digest, "alice"), "the first uploader keeps hers").toBe(true);
      expect(await store.isAttachmentUploader(`sha256:${"1".repeat(64)}`, "alice"), "another digest").toBe(false);
      expect(Array.from((await store.getAttachment(digest)).data), "the bytes are untouched").toEqual(Array.from(bytes));
    });

    test("ReturnedAttachmentsAreCopies", async ({ store }) => {
      const bytes = new Uint8Array([1, 2, 3, 4]);
      const ref = await store.putAttachment("text/plain", bytes);
      bytes[0] = 99;
      const first = await store.getAttachment(ref.digest);
      tryMutate(() => (first.data[1] = 98));
      tryMutate(() => (first.ref.size = 1000));
      const second = await store.getAttachment(ref.digest);
      expect(Array.from(second.data), "stored bytes after mutating the input and a returned copy").toEqual([1, 2, 3, 4]);
      expect(second.ref.size).toBe(4);
    });
  });
}
