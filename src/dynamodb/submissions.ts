/**
 * The SubmissionStore on DynamoDB. Every transition is one conditional write of the small state
 * item (claim, renew, release, wait, resume, reserve, cancel-while-running) or, when the session
 * head moves (admission, finalize, cancel of a queued or waiting one), one transaction with the
 * session item (`session-head.ts`). A refused condition comes back with the current item and is
 * mapped to the contract's error, unless it shows this call's own earlier try (`state-update.ts`).
 * A re-claim also writes a takeover marker into the conversation's log (ADR 0009).
 */
import { GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import type { SettledPayload } from "../protocol/records.ts";
import { CancelRequested, ClaimLost, InboxNotDrained, SubmissionNotFound } from "../errors.ts";
import type { SubmissionStore } from "../store/store.ts";
import {
  type Attempt,
  type Cancellation,
  cancelledOutcome,
  type DispatchMessage,
  type LeaseRenewal,
  type LeaseRenewed,
  type AdmittedSubmission,
  type NewSubmission,
  type SessionKey,
  type SessionSubmissionQuery,
  type Submission,
  type SubmissionClaim,
  type SubmissionRelease,
  type SubmissionStatus,
  type SubmissionWait,
  firstWaitCheck,
} from "../store/submission.ts";
import { setPendingCalls } from "./child-outcome.ts";
import type { StoreContext } from "./context.ts";
import type { ConversationLog } from "./conversation-log.ts";
import { claimEpoch, retiredEpoch } from "./log-epoch.ts";
import { queryAll } from "./query.ts";
import { Expr } from "./expression.ts";
import { BOOL, bool, type Item, N, num, reqNum, reqStr, S, str } from "./item.ts";
import { ATTEMPT_PREFIX, attemptSk, pad, submissionPk } from "./keys.ts";
import { BucketPeeks, childIds, freshSubmissions } from "./listing.ts";
import { loadState, loadSubmission, toSubmission } from "./loader.ts";
import { RetryStep, rerunOnRace } from "./retry.ts";
import { listSessionSubmissions } from "./session-listing.ts";
import { listActivity } from "./activity-listing.ts";
import type { ActivityPage, ActivityQuery } from "../store/activity.ts";
import { admitOnce, cancelBehindHead, replay, sessionKeyOf, settleOnce } from "./session-head.ts";
import { getSessionItem, resolveBehindGap, resolveStrandedHeads, sessionItemKey } from "./session-order.ts";
import { admitDelayedOnce, joinOnce, settleDelayed } from "./delayed-message.ts";
import { failedCondition, isTransientCancellation } from "./errors.ts";
import { transact, updateItem } from "./transact.ts";
import { type UpdateOutcome, updateState } from "./state-update.ts";
import { activityOf, bucketOf, cancellationOf, inputFromItem, inputKey, newInputItem, outcomeAttribute, stateKey, statusPk, submissionFromItems } from "./submission-item.ts";
import { type StatusBucket, waitCheckOfSortKey, waitSortKey } from "./table.ts";

export class DynamoSubmissions
  implements Omit<SubmissionStore, "deliverChildOutcome" | "postponeWaitCheck" | "getCallWait" | "findCallback" | "answerCall">
{
  readonly #ctx: StoreContext;
  readonly #log: ConversationLog;
  readonly #peeks: BucketPeeks;

  constructor(ctx: StoreContext, log: ConversationLog) {
    this.#ctx = ctx;
    this.#log = log;
    this.#peeks = new BucketPeeks(ctx);
  }

  async admitSubmission(sub: NewSubmission): Promise<AdmittedSubmission> {
    const ctx = this.#ctx;
    // A dispatch id may have been admitted before (a replay); a minted one cannot have been.
    const existing = sub.freshId ? undefined : await loadSubmission(ctx, sub.id);
    if (existing) {
      const submission = await replay(ctx, existing, sub);
      // An admitter that died before its look at the pointer (ADR 0035): the retry looks.
      await resolveBehindGap(ctx, existing.state);
      return { submission, replayed: true };
    }
    const inputItem = await newInputItem(ctx, sub);
    const ord = ctx.nextOrd();
    if (sub.delayedUntil !== undefined) return rerunOnRace("admitSubmission", () => admitDelayedOnce(ctx, sub, inputItem, ord));
    return rerunOnRace("admitSubmission", () => admitOnce(ctx, sub, inputItem, ord));
  }

  joinSessionOrder(submissionId: string): Promise<Submission> {
    return rerunOnRace("joinSessionOrder", () => joinOnce(this.#ctx, submissionId));
  }

  async getSubmission(id: string): Promise<Submission> {
    const loaded = await loadSubmission(this.#ctx, id);
    if (!loaded) throw new SubmissionNotFound(id);
    return toSubmission(this.#ctx, loaded);
  }

  async listRunnable(): Promise<Submission[]> {
    const ctx = this.#ctx;
    // A session whose pointer waits at a gap with written members behind it (their admitter died
    // before its look) has no runnable head until someone looks: the sweep, through this listing.
    const promoted = resolveStrandedHeads(ctx, this.#peeks).then(async (ids) => (await Promise.all(ids.map((id) => loadState(ctx, id)))).filter((s) => s !== undefined));
    const states = Promise.all([this.#peeks.peek("runnable"), promoted]).then(([peeked, made]) => [
      ...peeked.filter((p) => !made.some((m) => str(m, "id") === str(p, "id"))),
      ...made,
    ]);
    return freshSubmissions(ctx, states, (s) => str(s, "status") === "queued" && bool(s, "isHead"));
  }

  async getSessionHead(key: SessionKey): Promise<Submission | undefined> {
    const headId = str(await getSessionItem(this.#ctx, key), "headId");
    if (headId === undefined) return undefined;
    const loaded = await loadSubmission(this.#ctx, headId);
    return loaded ? toSubmission(this.#ctx, loaded) : undefined;
  }

  listSessionSubmissions(key: SessionKey, query: SessionSubmissionQuery): Promise<Submission[]> {
    return listSessionSubmissions(this.#ctx, key, query);
  }

  listActivity(query: ActivityQuery): Promise<ActivityPage> {
    return listActivity(this.#ctx, query);
  }

  async listByStatus(status: SubmissionStatus): Promise<Submission[]> {
    const buckets: StatusBucket[] = status === "queued" ? ["runnable", "queued"] : [bucketOf(status, false)];
    const peeked = Promise.all(buckets.map((b) => this.#peeks.peek(b))).then((all) => all.flat());
    return freshSubmissions(this.#ctx, peeked, (s) => str(s, "status") === status);
  }

  async claimSubmission(claim: SubmissionClaim): Promise<Submission> {
    const ctx = this.#ctx;
    const e = new Expr()
      .set("status", S("running"))
      .set("attemptId", S(claim.attemptId))
      .set("ownerId", S(claim.ownerId))
      .set("leaseExpiresAt", N(claim.leaseExpiresAt))
      .setItem(activityOf(claim.submissionId, ctx.clock.now()))
      .set("byStatusPk", statusPk("running", claim.submissionId));
    // One write charges the attempt unless this is a resume (`charge` 0), remembers what it
    // charged (the returned row reports pendingResume from it) and re-arms the charge.
    const count = e.n("attemptCount");
    const charge = e.n("charge");
    e.setRaw(`${count} = ${count} + ${charge}`).setRaw(`${e.n("claimCharge")} = ${charge}`).set("charge", N(1));
    // Every claim gets the next fence epoch (log-epoch.ts), resumes included.
    const claims = e.n("claims");
    e.setRaw(`${claims} = if_not_exists(${claims}, ${e.v(N(0))}) + ${e.v(N(1))}`);
    const condition = `${e.n("status")} = ${e.v(S("queued"))} AND ${e.n("isHead")} = ${e.v(BOOL(true))}`;
    let outcome = await updateState(ctx, claim.submissionId, e, condition);
    const current = outcome.done ? undefined : outcome.current;
    if (current && str(current, "status") === "running" && str(current, "attemptId") === claim.attemptId) {
      outcome = { done: true, item: current };
    }
    const state = this.#expect(outcome, claim.submissionId, (s) => {
      if (str(s, "status") !== "queued") return `submission ${claim.submissionId} is ${str(s, "status")}, not queued`;
      return `submission ${claim.submissionId} is not the head of its session`;
    });
    // A submission claimed before may have a predecessor still appending (a lost lease): the
    // takeover marker in its log refuses that predecessor's later appends before this claim's
    // owner reads the log. A first claim follows the previous submission's settlement record,
    // which closed the epochs before it.
    if ((num(state, "claims") ?? 1) > 1) await this.#log.markTakeover(reqStr(state, "conversationId"), claimEpoch(state));
    const input = claim.input ?? (await this.#input(claim.submissionId));
    const sub = submissionFromItems(state, input);
    sub.pendingResume = num(state, "claimCharge") === 0;
    return sub;
  }

  async startAttempt(attempt: Attempt): Promise<void> {
    await this.#ctx.dynamo.send(
      new PutItemCommand({
        TableName: this.#ctx.table,
        Item: {
          pk: S(submissionPk(attempt.submissionId)),
          sk: S(attemptSk(attempt.startedAt, attempt.id)),
          id: S(attempt.id),
          submissionId: S(attempt.submissionId),
          ownerId: S(attempt.ownerId),
          startedAt: N(attempt.startedAt),
        },
      }),
    );
  }

  async listAttempts(submissionId: string): Promise<Attempt[]> {
    const items = await queryAll(this.#ctx, {
      KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
      ExpressionAttributeValues: { ":pk": S(submissionPk(submissionId)), ":prefix": S(ATTEMPT_PREFIX) },
      ConsistentRead: true,
    });
    return items.map((item) => ({
      id: reqStr(item, "id"),
      submissionId: reqStr(item, "submissionId"),
      ownerId: reqStr(item, "ownerId"),
      startedAt: reqNum(item, "startedAt"),
    }));
  }

  async renewLease(renewal: LeaseRenewal): Promise<LeaseRenewed> {
    const e = new Expr().set("leaseExpiresAt", N(renewal.leaseExpiresAt));
    const outcome = await updateState(this.#ctx, renewal.submissionId, e, this.#fence(e, renewal.attemptId));
    // The update returns the row it wrote (ALL_NEW): a cancel is learnt without another read.
    const state = this.#expect(outcome, renewal.submissionId, () => notRunningUnder(renewal.submissionId, renewal.attemptId));
    const cancellation = cancellationOf(state);
    return cancellation ? { cancelRequested: true, cancellation } : { cancelRequested: bool(state, "cancelRequested") };
  }

  async listExpiredLeases(now: number): Promise<Submission[]> {
    return freshSubmissions(
      this.#ctx,
      this.#peeks.peek("running"),
      (s) => str(s, "status") === "running" && (num(s, "leaseExpiresAt") ?? Number.POSITIVE_INFINITY) <= now,
    );
  }

  async releaseSubmission(release: SubmissionRelease): Promise<void> {
    const id = release.submissionId;
    const e = new Expr()
      .set("status", S("queued"))
      .setItem(activityOf(id, this.#ctx.clock.now()))
      .set("byStatusPk", statusPk("runnable", id))
      .remove("attemptId", "ownerId", "leaseExpiresAt");
    if (release.lastError) e.set("lastError", S(release.lastError));
    if (release.continuation) e.set("charge", N(0));
    if (release.notBefore !== undefined) e.set("notBefore", N(release.notBefore));
    else e.remove("notBefore");
    if (release.retry !== undefined) e.set("retry", S(JSON.stringify(release.retry)));
    else e.remove("retry");
    const outcome = await updateState(this.#ctx, id, e, this.#fence(e, release.attemptId));
    this.#expect(outcome, id, () => notRunningUnder(id, release.attemptId));
  }

  async waitSubmission(wait: SubmissionWait): Promise<void> {
    const id = wait.submissionId;
    const now = this.#ctx.clock.now();
    const e = new Expr()
      .set("status", S("waiting"))
      .setItem(activityOf(id, now))
      .set("charge", N(0))
      .set("byStatusPk", statusPk("waiting", id))
      .set("byStatusSk", S(waitSortKey(firstWaitCheck(wait, now), id)))
      .remove("attemptId", "ownerId", "leaseExpiresAt");
    if (wait.waitUntil !== undefined) e.set("waitUntil", N(wait.waitUntil));
    else e.remove("waitUntil");
    setPendingCalls(e, wait.pendingCalls);
    if (wait.waitingFor !== undefined && wait.waitingFor.length > 0) e.set("waitingFor", S(JSON.stringify(wait.waitingFor)));
    else e.remove("waitingFor");
    // Never a run whose cancel was requested since its owner's last renewal: nobody would tell it.
    const cancel = e.n("cancelRequested");
    const condition = `${this.#fence(e, wait.attemptId)} AND (attribute_not_exists(${cancel}) OR ${cancel} <> ${e.v(BOOL(true))})`;
    // The session item learns that its head waits (`sessionLive` reads nothing else).
    await this.#withSession(id, e, condition, new Expr().set("headWaiting", S(id)), (s) =>
      str(s, "status") === "running" && str(s, "attemptId") === wait.attemptId && bool(s, "cancelRequested")
        ? new CancelRequested(id)
        : notRunningUnder(id, wait.attemptId),
    );
  }

  async resumeSubmission(submissionId: string): Promise<void> {
    const e = new Expr()
      .set("status", S("queued"))
      .setItem(activityOf(submissionId, this.#ctx.clock.now()))
      .set("byStatusPk", statusPk("runnable", submissionId))
      .remove("waitUntil", "pendingCalls", "waitingFor");
    e.setRaw(`${e.n("byStatusSk")} = ${e.n("ord")}`);
    // A delayed message is not its session's head: it joins the order instead (`joinSessionOrder`).
    const condition = `${e.n("status")} = ${e.v(S("waiting"))} AND attribute_not_exists(${e.n("delayedUntil")})`;
    await this.#withSession(submissionId, e, condition, new Expr().remove("headWaiting"), (s) =>
      `submission ${submissionId} is ${str(s, "status")}${num(s, "delayedUntil") !== undefined ? " (a delayed message)" : ""}, not waiting`,
    );
  }

  async sessionLive(key: SessionKey): Promise<boolean> {
    const session = await getSessionItem(this.#ctx, key);
    const headId = str(session, "headId");
    return headId !== undefined && str(session, "headWaiting") !== headId;
  }

  /**
   * One transaction: the state update `e` under `condition`, and `session` on its session's item
   * (only heads wait or resume, so the head's flag is the session's). The SDK retries it under
   * one request token, so a lost response is not applied twice.
   */
  async #withSession(id: string, e: Expr, condition: string, session: Expr, refusal: (current: Item) => string | Error): Promise<void> {
    const ctx = this.#ctx;
    await rerunOnRace("waitOrResume", async () => {
      const state = await loadState(ctx, id);
      if (!state) throw new SubmissionNotFound(id);
      const reasons = await transact(ctx, [updateItem(ctx, stateKey(id), e, condition), updateItem(ctx, sessionItemKey(sessionKeyOf(state)), session)]);
      if (!reasons) return;
      if (failedCondition(reasons, 0)) {
        const reason = refusal((reasons[0]?.Item as Item | undefined) ?? state);
        throw typeof reason === "string" ? new ClaimLost(reason) : reason;
      }
      if (isTransientCancellation(reasons)) throw new RetryStep("wait/resume raced");
      throw new Error(`update of ${id} refused (${reasons.map((r) => r.Code).join(",")})`);
    });
  }

  async listChildSubmissions(parentSubmissionId: string, options: { unsettledOnly?: boolean } = {}): Promise<Submission[]> {
    const ids = await childIds(this.#ctx, parentSubmissionId);
    // Unsettled only: the small state items tell, so a settled child's input is never read.
    return freshSubmissions(
      this.#ctx,
      ids,
      (s) =>
        str(s, "parentSubmissionId") === parentSubmissionId &&
        !(options.unsettledOnly && (str(s, "status") === "settled" || str(s, "status") === "terminalizing")),
    );
  }

  async listDueWaits(now: number): Promise<Submission[]> {
    return freshSubmissions(this.#ctx, this.#peeks.peek("waiting", pad(Math.min(now + 1, Number.MAX_SAFE_INTEGER))), (s) => {
      const check = waitCheckOfSortKey(str(s, "byStatusSk"));
      return str(s, "status") === "waiting" && check !== undefined && check <= now;
    });
  }

  async cancelSubmission(submissionId: string, cancellation: Cancellation): Promise<{ wasRunning: boolean; settled?: boolean }> {
    const ctx = this.#ctx;
    const kept = await outcomeAttribute(ctx, submissionId, cancelledOutcome(cancellation));
    return rerunOnRace("cancelSubmission", async () => {
      const state = await loadState(ctx, submissionId);
      if (!state) throw new SubmissionNotFound(submissionId);
      const status = str(state, "status");
      const e = new Expr().set("cancelRequested", BOOL(true));
      if (status === "running") {
        if (bool(state, "cancelRequested")) return { wasRunning: true };
        e.set("cancelCode", S(cancellation.errorCode)).set("cancelError", S(cancellation.error));
        const outcome = await updateState(ctx, submissionId, e, `${e.n("status")} = ${e.v(S("running"))}`);
        if (!outcome.done) throw new RetryStep("status moved");
        return { wasRunning: true };
      }
      if (status !== "queued" && status !== "waiting") throw new ClaimLost(`submission ${submissionId} is already ${status}`);
      if (num(state, "delayedUntil") !== undefined) {
        // Never joined its session's order nor its conversation: settled at once, no record.
        await settleDelayed(ctx, state, e, cancellation, kept);
        return { wasRunning: false, settled: true };
      }
      // The settlement is reserved here and written by the canceller (or a recoverer). A
      // submission claimed before may have an attempt that passed its fence check and is still
      // appending (a lease handed back by the sweeper): retire its claims in the log first, or
      // that append could land after the settlement record.
      if ((num(state, "claims") ?? 0) > 0) await this.#log.markTakeover(reqStr(state, "conversationId"), retiredEpoch(state));
      e.set("cancelCode", S(cancellation.errorCode))
        .set("cancelError", S(cancellation.error))
        .set("status", S("terminalizing"))
        .setItem(activityOf(submissionId, ctx.clock.now()))
        .set("byStatusPk", statusPk(bucketOf("terminalizing", false), submissionId))
        .set("byStatusSk", S(reqStr(state, "ord")))
        .remove("waitUntil", "pendingCalls", "waitingFor");
      for (const [name, value] of Object.entries(kept)) e.set(name, value);
      const condition = `${e.n("status")} = ${e.v(S(status))}`;
      if (status === "waiting") {
        // Only heads wait: the session item's flag goes with it (the settling head is live).
        const reasons = await transact(ctx, [
          updateItem(ctx, stateKey(submissionId), e, condition),
          updateItem(ctx, sessionItemKey(sessionKeyOf(state)), new Expr().remove("headWaiting")),
        ]);
        if (reasons) throw new RetryStep(`cancelling ${submissionId} raced (${reasons.map((r) => r.Code).join(",")})`);
      } else if (bool(state, "isHead")) {
        const outcome = await updateState(ctx, submissionId, e, condition);
        if (!outcome.done) throw new RetryStep("status moved");
      } else {
        // Behind the head it stays in the session's line, its member marked: the head search
        // promotes it as it is (terminalizing), and its record follows its predecessors'.
        await cancelBehindHead(ctx, state, e, condition);
      }
      return { wasRunning: false };
    });
  }

  async reserveSettlement(
    submissionId: string,
    attemptId: string,
    options?: { requireDrainedInbox?: boolean; outcome?: SettledPayload },
  ): Promise<void> {
    const e = new Expr()
      .set("status", S("terminalizing"))
      .setItem(activityOf(submissionId, this.#ctx.clock.now()));
    // The outcome rides on the reservation: a recoverer finishing a crashed settlement writes it.
    if (options?.outcome !== undefined) {
      for (const [name, value] of Object.entries(await outcomeAttribute(this.#ctx, submissionId, options.outcome))) e.set(name, value);
    }
    let condition = this.#fence(e, attemptId);
    if (options?.requireDrainedInbox) {
      const pending = e.n("inboxPending");
      condition += ` AND (attribute_not_exists(${pending}) OR ${pending} = ${e.v(N(0))})`;
    }
    const outcome = await updateState(this.#ctx, submissionId, e, condition);
    this.#expect(outcome, submissionId, (s) => {
      if (str(s, "status") === "running" && str(s, "attemptId") === attemptId && (num(s, "inboxPending") ?? 0) > 0) {
        return new InboxNotDrained(submissionId);
      }
      return notRunningUnder(submissionId, attemptId);
    });
  }

  async finalizeSettlement(submissionId: string, outcome?: SettledPayload): Promise<void> {
    const ctx = this.#ctx;
    const kept = outcome === undefined ? undefined : await outcomeAttribute(ctx, submissionId, outcome);
    await rerunOnRace("finalizeSettlement", async () => {
      const state = await loadState(ctx, submissionId);
      if (!state) throw new SubmissionNotFound(submissionId);
      const status = str(state, "status");
      if (status === "settled") return;
      if (status !== "terminalizing") throw new ClaimLost(`submission ${submissionId} is ${status}, not terminalizing`);
      await settleOnce(ctx, state, undefined, kept);
    });
  }

  /** `running under attemptId` as a condition on `e`. */
  #fence(e: Expr, attemptId: string): string {
    return `${e.n("status")} = ${e.v(S("running"))} AND ${e.n("attemptId")} = ${e.v(S(attemptId))}`;
  }

  /** The written item, or the contract error for a refusal (`SubmissionNotFound` when absent). */
  #expect(outcome: UpdateOutcome, id: string, refusal: (current: Item) => string | Error): Item {
    if (outcome.done) return outcome.item;
    if (!outcome.current) throw new SubmissionNotFound(id);
    const reason = refusal(outcome.current);
    throw typeof reason === "string" ? new ClaimLost(reason) : reason;
  }

  async #input(id: string): Promise<DispatchMessage> {
    const res = await this.#ctx.dynamo.send(
      new GetItemCommand({ TableName: this.#ctx.table, Key: inputKey(id), ConsistentRead: true }),
    );
    if (!res.Item) throw new SubmissionNotFound(id);
    return inputFromItem(this.#ctx, res.Item);
  }
}

function notRunningUnder(id: string, attemptId: string): string {
  return `submission ${id} is not running under attempt ${attemptId}`;
}
