import { isHarnessError } from "../errors.ts";
import type { ConversationRecord, SettledPayload } from "../protocol/records.ts";
import { doorbellOf } from "../ports/queue.ts";
import type { SessionKey, Submission } from "../store/submission.ts";
import type { ClaimStore, ReadStore } from "../store/store.ts";
import { correlationOf } from "../ports/observer.ts";
import type { AttemptContext, EngineContext } from "./engine-context.ts";
import { AttemptLogWriter } from "./log-writer.ts";
import { idFloor } from "../conversation/ids.ts";
import { wakeParent, type WakeResult } from "./wake.ts";

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
    // The outcome rides on the reservation: should this settler die before its record lands, a
    // recoverer writes this outcome, not "unknown" (a finished run is never reported failed).
    await ctx.store.reserveSettlement(sub.id, attemptId, { requireDrainedInbox: options.requireDrainedInbox, outcome: payload });
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
  // The next rebuild of the conversation starts from here, and so does a parent's wake, which
  // reads this child's outcome text (`childOutcomeOf`): stored before the finish.
  await log.saveCheckpoint();
  await finish(ctx, sub, attemptId, payload, { reserved: true });
  return "settled";
}

/**
 * How far before its reservation a settler's record may be minted: the settler reserves and then
 * appends on one clock, so only a clock stepped back in between puts the record earlier.
 */
const RESERVE_SKEW_MS = 1_000;

/**
 * Finishes a row left `terminalizing` by a crash: an existing settled record wins; otherwise the
 * outcome stored with the reservation is written, and only a reservation made without one (a row
 * from before outcomes were stored) settles as unknown. Reads the log from the reservation on,
 * not from the start. A submission cancelled behind its session's head waits for its turn (its
 * record follows its predecessors'): false then, and nothing is written.
 */
export async function reconcileTerminalizing(ctx: AttemptContext, sub: Submission): Promise<boolean> {
  if (sub.attemptId === undefined && (await ctx.store.getSessionHead(sub.sessionKey))?.id !== sub.id) return false;
  const since = await ctx.store.readRecords(sub.conversationId, idFloor(sub.updatedAt - RESERVE_SKEW_MS));
  const recorded = settledPayloadIn(since, sub.id);
  if (recorded) await finish(ctx, sub, sub.attemptId, recorded, { reserved: sub.outcome !== undefined });
  else await completeReservation(ctx, sub, sub.outcome ?? INDETERMINATE);
  return true;
}

const INDETERMINATE: SettledPayload = { status: "failed", error: SETTLEMENT_INDETERMINATE_MESSAGE, errorCode: "settlement_indeterminate" };

/**
 * The second phase for a reservation whose settler is not the attempt: appends `payload` as the
 * submission's settlement record (opening an empty log) and finalizes. Used by a canceller of a
 * queued or waiting submission and by recoverers. Recoverers may race (the sweeper, a redelivered
 * doorbell, the DLQ, a canceller): the store refuses a second settlement record and the loser
 * honours the winner's. Answers the outcome settled.
 */
export async function completeReservation(ctx: AttemptContext, sub: Submission, payload: SettledPayload): Promise<SettledPayload> {
  let written = payload;
  try {
    await new AttemptLogWriter(ctx.store, ctx.clock, sub, sub.attemptId).appendSettled(payload, { mayOpenLog: true });
  } catch (err) {
    if (!isHarnessError(err, "claim_lost")) throw err;
    const found = settledPayloadIn(await ctx.store.readRecords(sub.conversationId), sub.id);
    if (!found) throw err;
    written = found;
  }
  await finish(ctx, sub, sub.attemptId, written, { reserved: sub.outcome !== undefined });
  return written;
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

/**
 * After a settlement: rings the session's next head, or, when that head was cancelled behind its
 * predecessor (terminalizing, no attempt), writes its settlement now that its turn has come.
 */
async function handOn(ctx: AttemptContext, settled: Submission): Promise<void> {
  const head = await ctx.store.getSessionHead(settled.sessionKey);
  if (head?.status === "queued") {
    await ctx.faults?.("next_head_ringing", settled.id);
    await ctx.queue.ring(doorbellOf(head));
    await ctx.faults?.("next_head_rung", settled.id);
  } else if (head?.status === "terminalizing" && head.attemptId === undefined && head.outcome) {
    await completeReservation(ctx, head, head.outcome);
  }
}

/**
 * Finalizes (keeping the reservation's outcome when it stored one), tells, and hands on. A child
 * hands its outcome to its waiting parent first, inside its reservation (so a crash before the
 * wake leaves a `terminalizing` row whose recoverer wakes it), and once more after the finalize
 * if the parent had not parked yet (it may have since; a parent that parks reads its children's
 * rows). The orphan cascade (`ctx.cascade`: `cascadeToChildren` in `cancel.ts`, wired by the
 * runtime, since settlement does not import cancel) runs before the finalize, inside the
 * reservation: a crash before it leaves a `terminalizing` row whose recoverer cascades, so no
 * parent is ever settled with its cascade undone.
 */
async function finish(
  ctx: AttemptContext,
  sub: Submission,
  attemptId: string | undefined,
  payload: SettledPayload,
  options: { reserved: boolean },
): Promise<void> {
  let woke: WakeResult | undefined;
  if (sub.parentSubmissionId !== undefined) {
    await ctx.faults?.("parent_waking", sub.id);
    woke = await wakeParent(ctx, sub, payload);
  }
  // The orphan cascade, still inside the reservation: a crash before it is finished by the
  // recoverer of the `terminalizing` row (the sweep's backstop), never left undone.
  await ctx.cascade?.(sub);
  await ctx.store.finalizeSettlement(sub.id, options.reserved ? undefined : payload);
  ctx.observe({
    type: "submission_settled",
    correlation: correlationOf(sub, attemptId),
    payload,
  });
  ctx.onSettled(sub.id, payload);
  await ctx.faults?.("finalized", sub.id);
  if (woke === "not_waiting") await wakeParent(ctx, sub, payload);
  await handOn(ctx, sub);
}
