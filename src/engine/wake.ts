import type { ConversationRecord, RecordDraft, SettledPayload, ToolOutcomePayload } from "../protocol/records.ts";
import { activeLeafPath, reduce } from "../conversation/reducer.ts";
import { childAddress } from "../conversation/task-names.ts";
import { isHarnessError } from "../errors.ts";
import { correlationOf } from "../ports/observer.ts";
import { doorbellOf } from "../ports/queue.ts";
import type { Submission } from "../store/submission.ts";
import { cancellationFor, cancelSubmission } from "./cancel.ts";
import { iso, type AttemptContext } from "./engine-context.ts";
import { isNamesOnly } from "../agent/names-only-agents.ts";
import { taskTargetsOf } from "./subagents.ts";

/** The `task` tool's name, as the parent's outcome records carry it. */
const TASK = "task";

/** The error outcome of a call whose parent stopped waiting (`maxWaitMs`, or its own budget). */
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
  const content = childOutcomeText(await ctx.store.readRecords(child.conversationId), payload);
  const outcome: ToolOutcomePayload = { callId, toolName: TASK, content: [{ type: "text", text: content }] };
  if (payload.status !== "succeeded") outcome.isError = true;
  return deliver(ctx, parent, outcome);
}

/** Delivers `outcome` to the waiting `parent`; the delivery that empties its pending calls rings it. */
async function deliver(ctx: AttemptContext, parent: Submission, outcome: ToolOutcomePayload): Promise<WakeResult> {
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
async function settledOutcomeOf(ctx: AttemptContext, child: Submission): Promise<SettledPayload | undefined> {
  if (child.status !== "settled") return undefined;
  return child.outcome ?? findSettledIn(await ctx.store.readRecords(child.conversationId), child.id);
}

/** The children of a waiting parent's pending calls, by id (strongly consistent reads, no listing). */
async function pendingChildren(ctx: AttemptContext, parent: Submission): Promise<Array<{ callId: string; child?: Submission }>> {
  const at = { submissionId: parent.id, instance: parent.sessionKey.instance };
  return Promise.all(
    (parent.pendingCalls ?? []).map(async (callId) => {
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

/**
 * A parent's wait ran past its `waitUntil` (`maxWaitMs`, or its own budget). Each pending call is
 * answered: with its child's real outcome when the child has settled (its own wake was lost), or
 * `task wait expired`; the last answer requeues the parent. A wait bounded by `maxWaitMs` then
 * cancels the unsettled children (`cancelled_by_parent`, "parent wait expired"; harness-spec
 * §1.13). A wait that only the parent's budget bounded leaves them to the parent's settlement
 * (`timeout_exceeded` at its next claim), whose orphan cascade applies `onParentTerminal`, so
 * `leave_running` children keep running. A child's outcome racing this one: the store keeps
 * whichever lands first.
 */
export async function expireWait(ctx: AttemptContext, parent: Submission): Promise<void> {
  const children = await pendingChildren(ctx, parent);
  for (const { callId, child } of children) {
    const settled = child && (await settledOutcomeOf(ctx, child));
    const woke =
      child && settled
        ? await wakeParent(ctx, child, settled)
        : await deliver(ctx, parent, { callId, toolName: TASK, content: [{ type: "text", text: TASK_WAIT_EXPIRED }], isError: true });
    if (woke === "not_waiting" || woke === "no_parent") break; // resumed or settled meanwhile
  }
  if ((ctx.subagents?.limits.maxWaitMs ?? 0) <= 0) return; // only the budget bounded this wait
  for (const { child } of children) {
    if (child && child.status !== "settled" && child.status !== "terminalizing") await cancelChild(ctx, child, "parent wait expired");
  }
}

/**
 * The orphan cascade (`onParentTerminal: "cancel_children"`): a parent that settled cancels its
 * unsettled children with `cancelled_by_parent`: a queued or waiting child settles at once, a
 * running one stops at its next safe point. Settled children are left alone. Only a parent that
 * may have children is looked at (its agent has the `task` tool, or it was waiting on calls), so
 * other settlements cost no listing; the children of its pending calls are read by id as well
 * (a listing from an index may lag).
 */
export async function cascadeToChildren(ctx: AttemptContext, parent: Submission): Promise<number> {
  if (ctx.subagents?.limits.onParentTerminal === "leave_running") return 0;
  const hasPending = (parent.pendingCalls?.length ?? 0) > 0;
  // A process that knows the agent by name only (the http and sweeper functions) does not know
  // its policy: it lists the children of every parent it settles (cancels and recoveries: rare).
  const mayHaveChildren =
    hasPending ||
    taskTargetsOf(ctx.subagents, parent.sessionKey.agent, parent.depth) !== undefined ||
    isNamesOnly(ctx.definitions.get(parent.sessionKey.agent));
  if (!mayHaveChildren) return 0;
  const byId = new Map<string, Submission>();
  for (const child of await ctx.store.listChildSubmissions(parent.id)) byId.set(child.id, child);
  if (hasPending) for (const { child } of await pendingChildren(ctx, parent)) if (child) byId.set(child.id, child);
  let cancelled = 0;
  for (const child of byId.values()) {
    if (child.status === "settled" || child.status === "terminalizing") continue;
    if (await cancelChild(ctx, child, "parent settled")) cancelled++;
  }
  return cancelled;
}

/**
 * Cancels one child for its parent. A child that settled on its own after it was read (the
 * store refuses the cancel; its own outcome stands) is left alone, so one child's timing never
 * stops the cascade of the others, nor the parent's settlement or the sweep that runs it.
 */
async function cancelChild(ctx: AttemptContext, child: Submission, reason: string): Promise<boolean> {
  try {
    await cancelSubmission(ctx, child, cancellationFor(reason, "cancelled_by_parent"));
    return true;
  } catch (err) {
    if (isHarnessError(err, "already_settled") || isHarnessError(err, "submission_not_found")) return false;
    throw err;
  }
}

/**
 * A child claimed after its parent settled (the parent's cascade was lost to a crash): the
 * cancellation it settles with at once, or undefined.
 */
export async function orphanCancellation(ctx: AttemptContext, child: Submission) {
  if (child.parentSubmissionId === undefined || ctx.subagents?.limits.onParentTerminal === "leave_running") return undefined;
  try {
    const parent = await ctx.store.getSubmission(child.parentSubmissionId);
    if (parent.status !== "settled" && parent.status !== "terminalizing") return undefined;
  } catch (err) {
    if (!isHarnessError(err, "submission_not_found")) throw err;
  }
  return cancellationFor("parent settled", "cancelled_by_parent");
}
