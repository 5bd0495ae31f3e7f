/**
 * A submission is two items under `SUB#<id>`: the immutable input item (`IN`, up to the body
 * limit, spilled to S3 beyond the threshold) and the small state item (`ST`) that every
 * transition and every lease renewal rewrites. This file maps them to and from `Submission`.
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import type { SettledPayload } from "../protocol/records.ts";
import type { Cancellation, DispatchMessage, NewSubmission, Submission, SubmissionRetry, SubmissionStatus, WaitEntry } from "../store/submission.ts";
import { contentDigest } from "../conversation/content-digest.ts";
import type { StoreContext } from "./context.ts";
import { BOOL, bool, type Item, N, num, reqNum, reqStr, S, str } from "./item.ts";
import { noteBlobRefs } from "./blob-refs.ts";
import { INPUT_SK, STATE_SK, submissionPk } from "./keys.ts";
import { activityCursor } from "../store/activity.ts";
import { activityShardKey, shardOf, type StatusBucket, statusBucketKey, waitCheckOfSortKey } from "./table.ts";

export function stateKey(id: string): Record<string, AttributeValue> {
  return { pk: S(submissionPk(id)), sk: S(STATE_SK) };
}

export function inputKey(id: string): Record<string, AttributeValue> {
  return { pk: S(submissionPk(id)), sk: S(INPUT_SK) };
}

/** Index bucket of a state: queued heads are `runnable`, queued non-heads `queued`, terminalizing `running`. */
export function bucketOf(status: SubmissionStatus, isHead: boolean): StatusBucket {
  if (status === "terminalizing") return "running";
  return status === "queued" && isHead ? "runnable" : status;
}

/** `byStatusPk` of submission `id` in `bucket`. */
export function statusPk(bucket: StatusBucket, id: string): AttributeValue {
  return S(statusBucketKey(bucket, shardOf(id)));
}

/**
 * A transition's time and the activity index's key of it (ADR 0054): every write that sets
 * `updatedAt` sets these with it, so the index orders submissions by their latest activity (a
 * row written before the index existed joins it at its next transition).
 */
export function activityOf(id: string, now: number): Item {
  return {
    updatedAt: N(now),
    byActivityPk: S(activityShardKey(shardOf(id))),
    byActivitySk: S(activityCursor(now, id)),
  };
}

/** The state item of a freshly admitted submission. */
export function newStateItem(
  sub: NewSubmission,
  at: { seq: number; ord: string; isHead: boolean; now: number },
): Item {
  const item: Item = {
    ...stateKey(sub.id),
    id: S(sub.id),
    conversationId: S(sub.conversationId),
    agent: S(sub.sessionKey.agent),
    instance: S(sub.sessionKey.instance),
    session: S(sub.sessionKey.session),
    seq: N(at.seq),
    ord: S(at.ord),
    createdAt: N(sub.createdAt),
    ...activityOf(sub.id, at.now),
    status: S("queued"),
    attemptCount: N(0),
    // 1 = the next claim charges an attempt; 0 = it is a resume/continuation (pendingResume).
    charge: N(1),
    cancelRequested: BOOL(false),
    depth: N(sub.depth ?? 0),
    byStatusPk: statusPk(bucketOf("queued", at.isHead), sub.id),
    byStatusSk: S(at.ord),
  };
  if (at.isHead) item.isHead = BOOL(true);
  if (sub.parentSubmissionId !== undefined) {
    item.parentSubmissionId = S(sub.parentSubmissionId);
    item.byParentPk = S(sub.parentSubmissionId);
    item.byParentSk = S(at.ord);
  }
  if (sub.parentCallId !== undefined) item.parentCallId = S(sub.parentCallId);
  return item;
}

/** The `Submission` a state item and its input describe (fresh objects every call). */
export function submissionFromItems(state: Item, input: DispatchMessage): Submission {
  const sub: Submission = {
    id: reqStr(state, "id"),
    conversationId: reqStr(state, "conversationId"),
    sessionKey: {
      agent: reqStr(state, "agent"),
      instance: reqStr(state, "instance"),
      session: reqStr(state, "session"),
    },
    status: reqStr(state, "status") as SubmissionStatus,
    input,
    attemptCount: reqNum(state, "attemptCount"),
    createdAt: reqNum(state, "createdAt"),
    updatedAt: reqNum(state, "updatedAt"),
    depth: reqNum(state, "depth"),
    pendingResume: num(state, "charge") === 0,
    cancelRequested: bool(state, "cancelRequested"),
  };
  const attemptId = str(state, "attemptId");
  if (attemptId !== undefined) sub.attemptId = attemptId;
  const ownerId = str(state, "ownerId");
  if (ownerId !== undefined) sub.ownerId = ownerId;
  const lease = num(state, "leaseExpiresAt");
  if (lease !== undefined) sub.leaseExpiresAt = lease;
  const lastError = str(state, "lastError");
  if (lastError !== undefined) sub.lastError = lastError;
  const parent = str(state, "parentSubmissionId");
  if (parent !== undefined) sub.parentSubmissionId = parent;
  const callId = str(state, "parentCallId");
  if (callId !== undefined) sub.parentCallId = callId;
  const waitUntil = num(state, "waitUntil");
  if (waitUntil !== undefined) sub.waitUntil = waitUntil;
  const waitCheckAt = sub.status === "waiting" ? waitCheckOfSortKey(str(state, "byStatusSk")) : undefined;
  if (waitCheckAt !== undefined) sub.waitCheckAt = waitCheckAt;
  // Only a waiting row waits for calls (a cancel of a waiting parent leaves the set behind).
  const pendingCalls = state.pendingCalls?.SS;
  if (pendingCalls !== undefined && sub.status === "waiting") sub.pendingCalls = [...pendingCalls];
  const notBefore = num(state, "notBefore");
  if (notBefore !== undefined) sub.notBefore = notBefore;
  const retry = str(state, "retry");
  if (retry !== undefined) sub.retry = JSON.parse(retry) as SubmissionRetry;
  const waitingFor = sub.status === "waiting" ? str(state, "waitingFor") : undefined;
  if (waitingFor !== undefined) sub.waitingFor = JSON.parse(waitingFor) as WaitEntry[];
  const delayedUntil = sub.status === "waiting" ? num(state, "delayedUntil") : undefined;
  if (delayedUntil !== undefined) sub.delayedUntil = delayedUntil;
  const outcome = str(state, "outcome");
  if (outcome !== undefined) sub.outcome = JSON.parse(outcome) as SettledPayload;
  const cancellation = cancellationOf(state);
  if (cancellation !== undefined) sub.cancellation = cancellation;
  return sub;
}

/** The cancellation a state item carries (`cancelCode`, `cancelError`), or undefined. */
export function cancellationOf(state: Item): Cancellation | undefined {
  const errorCode = str(state, "cancelCode");
  if (errorCode === undefined) return undefined;
  return { errorCode: errorCode as Cancellation["errorCode"], error: str(state, "cancelError") ?? "" };
}

/** Outcome JSON up to this size stays on the state item (which then still reads as one unit). */
const OUTCOME_INLINE_BYTES = 2_048;

/** The state attribute keeping a settlement's outcome: its JSON, or the S3 digest of a larger one. */
export async function outcomeAttribute(ctx: StoreContext, submissionId: string, outcome: SettledPayload): Promise<Item> {
  const json = JSON.stringify(outcome);
  if (Buffer.byteLength(json) <= OUTCOME_INLINE_BYTES) return { outcome: S(json) };
  const ref = await ctx.blobs.putText(json);
  await noteBlobRefs(ctx, submissionPk(submissionId), [ref]);
  return { outcomeRef: S(ref) };
}

/**
 * The input item: the input's JSON inline, or its S3 digest when larger than the spill
 * threshold, plus the digest of its canonical JSON, which is what idempotent admission compares.
 */
export async function newInputItem(ctx: StoreContext, sub: NewSubmission): Promise<Item> {
  const json = JSON.stringify(sub.input);
  const item: Item = { ...inputKey(sub.id), inputDigest: S(inputDigest(sub.input)) };
  if (Buffer.byteLength(json) > ctx.spillThresholdBytes) item.inputRef = S(await ctx.blobs.putText(json));
  else item.input = S(json);
  // Before the input item exists (ADR 0034): its spill and its attachments are the submission's.
  await noteBlobRefs(ctx, submissionPk(sub.id), [str(item, "inputRef"), ...(sub.input.attachments ?? []).map((a) => a.digest)]);
  return item;
}

/** The input an input item holds (fetched from S3 when spilled). */
export async function inputFromItem(ctx: StoreContext, item: Item): Promise<DispatchMessage> {
  const inline = str(item, "input");
  const json = inline ?? (await ctx.blobs.getText(reqStr(item, "inputRef")));
  return JSON.parse(json) as DispatchMessage;
}

/** Digest of the canonical JSON of an input: key order and absent fields do not matter. */
export function inputDigest(input: DispatchMessage): string {
  return contentDigest(canonicalJson(input));
}

/** JSON with object keys sorted at every depth (undefined members dropped, as JSON does). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
}
