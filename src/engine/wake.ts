import type { ConversationRecord, RecordDraft, SettledPayload, ToolOutcomePayload } from "../protocol/records.ts";
import { viewFrom } from "../conversation/checkpoint.ts";
import { activeLeafPath, reduce } from "../conversation/reducer.ts";
import { childAddress } from "../conversation/task-names.ts";
import { isHarnessError } from "../errors.ts";
import { correlationOf } from "../ports/observer.ts";
import { doorbellOf } from "../ports/queue.ts";
import type { Submission } from "../store/submission.ts";
import { iso, type AttemptContext } from "./engine-context.ts";

/** The `task` tool's name, as the parent's outcome records carry it. */
export const TASK = "task";

/** The error outcome of a call whose parent stopped waiting (`maxChildWaitMs`, or its own budget). */
export const TASK_WAIT_EXPIRED = "task wait expired";

/** What handing a child's outcome to its parent came to (see `ChildOutcomeDelivered`). */
export type WakeResult = "delivered" | "requeued" | "not_waiting" | "not_pending" | "no_parent";

/**
 * The wake (harness-spec §1.13): appends the child's outcome to its waiting parent's log as the
 * `tool_outcome` of the parent's `task` call, through the store's guarded `deliverChildOutcome`
 * (a second outcome for the call is refused by the store itself, however deliveries race). The
 * delivery that answers the parent's last pending call requeues it (in the same write), and this
 * rings its doorbell. Nothing here decides from a listing whether every child settled.
 */
export async function wakeParent(ctx: AttemptContext, child: Submission, payload: SettledPayload): Promise<WakeResult> {
  const parentId = child.parentSubmissionId;
  const callId = child.parentCallId;
  if (parentId === undefined || callId === undefined) return "no_parent";
  let parent: Submission;
  try {
    parent = await ctx.store.getSubmission(parentId);
  } catch (err) {
    if (isHarnessError(err, "submission_not_found")) return "no_parent";
    throw err;
  }
  // Saves reading the child's log when the answer is plain; the store's guard decides.
  if (parent.status !== "waiting") return "not_waiting";
  if (!parent.pendingCalls?.includes(callId)) return "not_pending";
  const content = await childOutcomeOf(ctx, child.conversationId, payload);
  const outcome: ToolOutcomePayload = { callId, toolName: TASK, content: [{ type: "text", text: content }] };
  if (payload.status !== "succeeded") outcome.isError = true;
  return deliver(ctx, parent, outcome);
}

/** Delivers `outcome` to the waiting `parent`; the delivery that empties its pending calls rings it. */
export async function deliver(ctx: AttemptContext, parent: Submission, outcome: ToolOutcomePayload): Promise<WakeResult> {
  const draft: RecordDraft = {
    kind: "tool_outcome",
    conversationId: parent.conversationId,
    session: parent.sessionKey.session,
    submissionId: parent.id,
    time: iso(ctx.clock.now()),
    payload: outcome,
  };
  const out = await ctx.store.deliverChildOutcome({ parentSubmissionId: parent.id, callId: outcome.callId, drafts: [draft] });
  if (!out.delivered) return out.reason;
  if (!out.requeued) return "delivered";
  ctx.observe({ type: "submission_resumed", correlation: correlationOf(parent) });
  await ctx.faults?.("parent_requeued", parent.id);
  await ctx.queue.ring(doorbellOf(parent));
  return "requeued";
}

/**
 * The text of a child's outcome, read as cheaply as it can be: nothing for a structured result;
 * else the child's log from its newest checkpoint on (its settling attempt stores one at its
 * settlement record when the run wrote enough to need one, ADR 0018), the whole log only when
 * there is none or it cannot be used. The checkpoint's path holds the finished messages without
 * their streaming deltas, so a long child's wake reads a fraction of what it wrote.
 */
export async function childOutcomeOf(ctx: AttemptContext, conversationId: string, payload: SettledPayload): Promise<string> {
  if (payload.status === "succeeded" && payload.result !== undefined) return JSON.stringify(payload.result);
  const checkpoint = await ctx.store.readCheckpoint(conversationId);
  if (checkpoint) {
    const view = viewFrom(checkpoint, await ctx.store.readRecords(conversationId, checkpoint.at));
    if (view) return childOutcomeText(view.records, payload);
  }
  return childOutcomeText(await ctx.store.readRecords(conversationId), payload);
}

/**
 * The text of a child's outcome for its parent: the structured result's JSON, or the child's final
 * assistant text; for a failure `<error> (code: <errorCode>)` and, when the child wrote any, its
 * partial output.
 */
export function childOutcomeText(records: readonly ConversationRecord[], payload: SettledPayload): string {
  const text = finalAssistantText(records);
  if (payload.status === "succeeded") return payload.result !== undefined ? JSON.stringify(payload.result) : text;
  const failure = `${payload.error ?? "failed"} (code: ${payload.errorCode ?? "run_failed"})`;
  return text ? `${failure}\n\nPartial output before failure:\n${text}` : failure;
}

/** The text of the last `assistant_message_completed` on the active path. */
function finalAssistantText(records: readonly ConversationRecord[]): string {
  const path = activeLeafPath(reduce(records));
  for (let i = path.length - 1; i >= 0; i--) {
    const r = path[i]!;
    if (r.kind !== "assistant_message_completed") continue;
    const content = (r.payload.message.body as { content?: unknown } | undefined)?.content;
    if (!Array.isArray(content)) return "";
    return content
      .filter((b): b is { type: "text"; text: string } => (b as { type?: unknown })?.type === "text" && typeof (b as { text?: unknown }).text === "string")
      .map((b) => b.text)
      .join("");
  }
  return "";
}

function findSettledIn(records: readonly ConversationRecord[], submissionId: string): SettledPayload | undefined {
  return records.findLast((r) => r.kind === "submission_settled" && r.submissionId === submissionId)?.payload as SettledPayload | undefined;
}

/** A child's settled outcome, from its row (or its log, for a row finalized without one). */
export async function settledOutcomeOf(ctx: AttemptContext, child: Submission): Promise<SettledPayload | undefined> {
  if (child.status !== "settled") return undefined;
  return child.outcome ?? findSettledIn(await ctx.store.readRecords(child.conversationId), child.id);
}

/**
 * A waiting parent's pending `task` calls: those its wait entries name as children (ADR 0025), or
 * every pending call of a row parked before entries were written.
 */
export function pendingChildCalls(parent: Pick<Submission, "pendingCalls" | "waitingFor">): string[] {
  const pending = parent.pendingCalls ?? [];
  if (parent.waitingFor === undefined) return pending;
  const children = new Set(parent.waitingFor.flatMap((e) => (e.kind === "child" ? [e.callId] : [])));
  return pending.filter((callId) => children.has(callId));
}

/** The children of a waiting parent's pending calls, by id (strongly consistent reads, no listing). */
export async function pendingChildren(ctx: AttemptContext, parent: Submission): Promise<Array<{ callId: string; child?: Submission }>> {
  const at = { submissionId: parent.id, instance: parent.sessionKey.instance };
  return Promise.all(
    pendingChildCalls(parent).map(async (callId) => {
      try {
        return { callId, child: await ctx.store.getSubmission(childAddress(at, callId).submissionId) };
      } catch (err) {
        if (isHarnessError(err, "submission_not_found")) return { callId };
        throw err;
      }
    }),
  );
}

/**
 * Delivers the outcomes of a waiting parent's children that have settled: at park time (a child
 * that settled while its parent was still running found it not waiting) and as the sweep's
 * backstop (a wake lost to a crash). Returns how many it delivered.
 */
export async function deliverSettledChildren(ctx: AttemptContext, parent: Submission): Promise<number> {
  let delivered = 0;
  for (const { child } of await pendingChildren(ctx, parent)) {
    if (child === undefined) continue;
    const outcome = await settledOutcomeOf(ctx, child);
    if (outcome === undefined) continue;
    const woke = await wakeParent(ctx, child, outcome);
    if (woke === "delivered" || woke === "requeued") delivered++;
  }
  return delivered;
}
