import { isHarnessError } from "../errors.ts";
import { conversationCreatedDraft } from "../conversation/conversation-created.ts";
import type { ConversationRecord, RecordDraft, SettledPayload } from "../conversation/records.ts";
import { sessionKeyString, type SessionKey, type Submission } from "../ports/submission.ts";
import type { ClaimStore, ReadStore } from "../ports/store.ts";
import { iso, type AttemptContext, type EngineContext } from "./engine-context.ts";

/** What a settlement attempt came to. */
export type SettleResult = "settled" | "lost" | "inbox_not_drained";

export const SETTLEMENT_INDETERMINATE_MESSAGE = "process crashed during settlement; run outcome unknown";

/**
 * Two-phase settlement: reserve (running → terminalizing, fenced by the attempt), append the
 * one `submission_settled` record, finalize (→ settled). A crash between the phases leaves a
 * `terminalizing` row that `reconcileTerminalizing` finishes, so the record exists exactly once.
 * With `requireDrainedInbox`, a steer that landed after the last turn refuses the reservation
 * and the caller runs another turn instead of losing it.
 */
export async function settle(
  ctx: AttemptContext,
  sub: Submission,
  attemptId: string,
  payload: SettledPayload,
  options: { requireDrainedInbox?: boolean; mayOpenLog?: boolean } = {},
): Promise<SettleResult> {
  try {
    await ctx.store.reserveSettlement(sub.id, attemptId, { requireDrainedInbox: options.requireDrainedInbox });
  } catch (err) {
    if (isHarnessError(err, "claim_lost")) return "lost";
    if (isHarnessError(err, "inbox_not_drained")) return "inbox_not_drained";
    throw err;
  }
  await ctx.faults?.("reserved", sub.id);
  // Only this attempt can hold the reservation, and a reservation is only ever taken from a
  // running row, so no earlier settled record can exist: no log read needed here. But this
  // settler may have stalled past the grace: a recoverer then settled the submission (and the
  // next one may have run), and the store refuses a second settlement record.
  try {
    await appendSettled(ctx, sub, attemptId, payload, { mayOpenLog: options.mayOpenLog });
  } catch (err) {
    if (isHarnessError(err, "claim_lost")) return "lost";
    throw err;
  }
  await ctx.faults?.("settled_recorded", sub.id);
  await finish(ctx, sub, attemptId, payload);
  return "settled";
}

/**
 * Finishes a row left `terminalizing` by a crash: an existing settled record wins; otherwise
 * the outcome is unknown and says so.
 */
export async function reconcileTerminalizing(ctx: AttemptContext, sub: Submission): Promise<void> {
  // Recoverers may race (the sweeper, a redelivered doorbell, the DLQ): the record is appended
  // only on the head it was looked for under, so a loser re-reads and honours the winner's.
  for (;;) {
    const records = await ctx.store.readRecords(sub.conversationId);
    const existing = settledPayloadIn(records, sub.id);
    const payload: SettledPayload = existing ?? {
      status: "failed",
      error: SETTLEMENT_INDETERMINATE_MESSAGE,
      errorCode: "settlement_indeterminate",
    };
    if (!existing) {
      try {
        await appendSettled(ctx, sub, sub.attemptId, payload, { expectedHead: records.at(-1)?.id ?? "" });
      } catch (err) {
        if (isHarnessError(err, "claim_lost")) continue;
        throw err;
      }
    }
    await finish(ctx, sub, sub.attemptId, payload);
    return;
  }
}

/** The payload of the submission's `submission_settled` record, if it has one. */
export async function findSettledPayload(
  ctx: Pick<EngineContext<ReadStore>, "store">,
  conversationId: string,
  submissionId: string,
): Promise<SettledPayload | undefined> {
  return settledPayloadIn(await ctx.store.readRecords(conversationId), submissionId);
}

function settledPayloadIn(records: readonly ConversationRecord[], submissionId: string): SettledPayload | undefined {
  for (let i = records.length - 1; i >= 0; i--) {
    const rec = records[i]!;
    if (rec.kind === "submission_settled" && rec.submissionId === submissionId) return rec.payload;
  }
  return undefined;
}

/**
 * Rings the session's next head, if it is queued (its doorbell may have been dropped) and, with
 * `staleMs`, has not moved (been admitted or promoted) for that long.
 */
export async function ringNextHead(ctx: EngineContext<ClaimStore>, key: SessionKey, staleMs = 0): Promise<void> {
  const head = await ctx.store.getSessionHead(key);
  if (head?.status === "queued" && ctx.clock.now() - head.updatedAt >= staleMs) {
    await ctx.queue.ring({ submissionId: head.id, sessionKey: sessionKeyString(key) });
  }
}

/**
 * Appends the submission's `submission_settled` record. Into an empty log (known from
 * `expectedHead: ""`, or looked up with `mayOpenLog` by settlements that may precede any drive)
 * `conversation_created` goes first, under the empty head: a settlement must not become a
 * conversation's first record (the admission's append of it may have failed).
 */
async function appendSettled(
  ctx: AttemptContext,
  sub: Submission,
  attemptId: string | undefined,
  payload: SettledPayload,
  options: { expectedHead?: string; mayOpenLog?: boolean } = {},
): Promise<void> {
  const time = iso(ctx.clock.now());
  const record: RecordDraft = {
    kind: "submission_settled",
    conversationId: sub.conversationId,
    session: sub.sessionKey.session,
    submissionId: sub.id,
    ...(attemptId ? { attemptId } : {}),
    time,
    payload,
  };
  let head = options.expectedHead;
  if (head === undefined && options.mayOpenLog && (await ctx.store.readRecords(sub.conversationId, "", 1)).length === 0) head = "";
  if (head === "") {
    const created = conversationCreatedDraft(sub.conversationId, sub.sessionKey, time);
    try {
      await ctx.store.appendRecords(sub.conversationId, [created, record], { expectedHead: "" });
      return;
    } catch (err) {
      // Another writer opened the log first: append after it (a caller that pinned the head re-reads).
      if (options.expectedHead !== undefined || !isHarnessError(err, "claim_lost")) throw err;
      head = undefined;
    }
  }
  await ctx.store.appendRecords(sub.conversationId, [record], head === undefined ? {} : { expectedHead: head });
}

async function finish(
  ctx: AttemptContext,
  sub: Submission,
  attemptId: string | undefined,
  payload: SettledPayload,
): Promise<void> {
  await ctx.store.finalizeSettlement(sub.id);
  ctx.observe({
    type: "submission_settled",
    correlation: {
      sessionKey: sub.sessionKey,
      conversationId: sub.conversationId,
      submissionId: sub.id,
      ...(attemptId ? { attemptId } : {}),
    },
    payload,
  });
  ctx.onSettled(sub.id, payload);
  await ringNextHead(ctx, sub.sessionKey);
}
