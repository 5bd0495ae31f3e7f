import { isHarnessError } from "../errors.ts";
import type { ConversationRecord, SettledPayload } from "../conversation/records.ts";
import { doorbellOf } from "../ports/queue.ts";
import type { SessionKey, Submission } from "../ports/submission.ts";
import type { ClaimStore, ReadStore } from "../ports/store.ts";
import { correlationOf } from "../ports/observer.ts";
import type { AttemptContext, EngineContext } from "./engine-context.ts";
import { AttemptLogWriter } from "./log-writer.ts";
import { idFloor } from "../conversation/ids.ts";

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
  log: AttemptLogWriter,
  payload: SettledPayload,
  options: { requireDrainedInbox?: boolean; mayOpenLog?: boolean } = {},
): Promise<SettleResult> {
  const attemptId = log.correlation.attemptId!;
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
    await log.appendSettled(payload, { mayOpenLog: options.mayOpenLog });
  } catch (err) {
    if (isHarnessError(err, "claim_lost")) return "lost";
    throw err;
  }
  await ctx.faults?.("settled_recorded", sub.id);
  await finish(ctx, sub, attemptId, payload);
  return "settled";
}

/**
 * How far before its reservation a settler's record may be minted: the settler reserves and then
 * appends on one clock, so only a clock stepped back in between puts the record earlier.
 */
const RESERVE_SKEW_MS = 1_000;

/**
 * Finishes a row left `terminalizing` by a crash: an existing settled record wins; otherwise
 * the outcome is unknown and says so. Reads the log from the reservation on, not from the start.
 */
export async function reconcileTerminalizing(ctx: AttemptContext, sub: Submission): Promise<void> {
  const since = await ctx.store.readRecords(sub.conversationId, idFloor(sub.updatedAt - RESERVE_SKEW_MS));
  let payload = settledPayloadIn(since, sub.id);
  if (!payload) {
    const unknown: SettledPayload = { status: "failed", error: SETTLEMENT_INDETERMINATE_MESSAGE, errorCode: "settlement_indeterminate" };
    try {
      await new AttemptLogWriter(ctx.store, ctx.clock, sub, sub.attemptId).appendSettled(unknown, { mayOpenLog: true });
      payload = unknown;
    } catch (err) {
      // The store refuses a second settlement record: another recoverer wrote one meanwhile (or
      // the settler's lies before the window read). Recoverers may race (the sweeper, a
      // redelivered doorbell, the DLQ); the loser honours the winner's record.
      if (!isHarnessError(err, "claim_lost")) throw err;
      payload = settledPayloadIn(await ctx.store.readRecords(sub.conversationId), sub.id);
      if (!payload) throw err;
    }
  }
  await finish(ctx, sub, sub.attemptId, payload);
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
export async function ringSessionHead(ctx: EngineContext<ClaimStore>, key: SessionKey, staleMs = 0): Promise<void> {
  const head = await ctx.store.getSessionHead(key);
  if (head?.status === "queued" && ctx.clock.now() - head.updatedAt >= staleMs) {
    await ctx.queue.ring(doorbellOf(head));
  }
}

async function finish(
  ctx: AttemptContext,
  sub: Submission,
  attemptId: string | undefined,
  payload: SettledPayload,
): Promise<void> {
  await ctx.store.finalizeSettlement(sub.id, payload);
  ctx.observe({
    type: "submission_settled",
    correlation: correlationOf(sub, attemptId),
    payload,
  });
  ctx.onSettled(sub.id, payload);
  await ctx.faults?.("finalized", sub.id);
  const head = await ctx.store.getSessionHead(sub.sessionKey);
  if (head?.status !== "queued") return;
  await ctx.faults?.("next_head_ringing", sub.id);
  await ctx.queue.ring(doorbellOf(head));
  await ctx.faults?.("next_head_rung", sub.id);
}
