import { errorText, isHarnessError } from "../errors.ts";
import type { SettledPayload, SubmissionRetryingPayload } from "../protocol/records.ts";
import { correlationOf, type OpInfo } from "../ports/observer.ts";
import { doorbellOf } from "../ports/queue.ts";
import { budgetStart, type Cancellation, type Submission, type SubmissionRetry } from "../store/submission.ts";
import {
  agentBudgets,
  DEFAULT_TOOL_TIMEOUT_MS,
  DEFAULT_TURN_TIMEOUT_MS,
  validateAgentSetup,
  type AgentSetup,
} from "../agent/agent-setup.ts";
import { formatDuration } from "../drive/duration.ts";
import { backpressureDelayMs } from "../drive/provider-backpressure.ts";
import { runInterceptors } from "../drive/interceptors.ts";
import type { DriveOutcome } from "../drive/drive.ts";
import { transientBackoffMs } from "./backoff.ts";
import { ABORT_ABANDON, ABORT_LEASE_LOST, ABORT_SHUTDOWN, type AttemptContext } from "./engine-context.ts";
import { AttemptLogWriter } from "./log-writer.ts";
import { settle } from "./settlement.ts";
import { usageOfEarlierAttempts } from "./earlier-usage.ts";
import { park } from "./park.ts";
import { taskSpawner } from "./spawn.ts";
import { StoreProgress } from "./store-progress.ts";
import { cascadeToChildren, orphanCancellation } from "./cancel.ts";
import { answerCallWait } from "./call-answers.ts";
import { scheduleFollowUp } from "./schedule-message.ts";

export interface AttemptOptions {
  /** Aborted on process shutdown (reason `shutdown`) or crash simulation (reason `abandon`). */
  signal: AbortSignal;
  /** True when this invocation should hand the run off (e.g. Lambda's remaining time is short). */
  shouldYield?: () => boolean;
}

/** How an attempt left its submission, for the doorbell that started it. */
export interface AttemptEnd {
  /**
   * Released under provider backpressure: no attempt may start before this epoch ms. The
   * doorbell comes back then (the queue's delay: an SQS message's visibility, an in-process
   * timer) instead of a new ring, so a long wait holds no invocation and no process.
   */
  notBefore?: number;
}

/**
 * Runs one claimed attempt to its end: budgets, heartbeat, the drive, and the outcome switch
 * (settle, release for a fresh attempt, release until the provider takes requests again,
 * continue in a new invocation, or abandon).
 */
export async function runAttempt(ctx: AttemptContext, sub: Submission, options: AttemptOptions): Promise<AttemptEnd> {
  const attemptId = sub.attemptId!;
  const attemptAbort = new AbortController();
  const onProcessAbort = () => attemptAbort.abort(options.signal.reason);
  if (options.signal.aborted) onProcessAbort();
  else options.signal.addEventListener("abort", onProcessAbort, { once: true });
  // The lease is renewed from the claim on: a slow initializer must not let it lapse. But only
  // while the attempt's store calls come back: one that hangs (a response that never arrives)
  // must not hold the session for good, so after a bound without any the lease is let lapse.
  const progress = new StoreProgress(ctx, DEFAULT_TURN_TIMEOUT_MS, DEFAULT_TOOL_TIMEOUT_MS);
  // A cancel, learnt from a lease renewal: the drive stops at its next safe point and the
  // attempt settles with the cancellation (its reason is the signal's reason).
  const cancelAbort = new AbortController();
  const heartbeat = startHeartbeat(ctx, sub, attemptAbort, progress, (cancellation) => {
    if (!cancelAbort.signal.aborted) cancelAbort.abort(cancellation);
  });
  ctx.heartbeats?.set(sub.id, heartbeat.beatNow);
  // The attempt's one writer of the log: the drive and the settlement append through it.
  // It learns a cancel from every fenced append too (the row the fence reads anyway): within
  // about one delta flush of the cancel, not only at the next lease renewal.
  const log = new AttemptLogWriter(progress.track(ctx.store), ctx.clock, sub, attemptId, {
    onCancel: (cancellation) => {
      if (!cancelAbort.signal.aborted) cancelAbort.abort(cancellation);
    },
  });
  const correlation = log.correlation;
  // A failure may come before any drive wrote to the log, which may then still be empty.
  const fail = async (errorCode: NonNullable<SettledPayload["errorCode"]>, error: string) => {
    await heartbeat.stop();
    const payload: SettledPayload = { status: "failed", error, errorCode, ...(await usageOfEarlierAttempts(ctx, sub)) };
    await settle(ctx, sub, log, payload, { mayOpenLog: true });
  };

  try {
    // Cancelled while no attempt ran it (the owner died, or it was handed back), or a child whose
    // parent settled without cancelling it (its cascade was lost): settle now.
    const cancelled = sub.cancellation ?? (await orphanCancellation(ctx, sub));
    if (cancelled) {
      await fail(cancelled.errorCode, cancelled.error);
      return {};
    }
    const definition = ctx.definitions.get(sub.sessionKey.agent);
    if (!definition) {
      await fail("run_failed", `unknown agent: ${sub.sessionKey.agent}`);
      return {};
    }
    let setup: AgentSetup;
    try {
      setup = await definition.initialize({
        agent: sub.sessionKey.agent,
        instance: sub.sessionKey.instance,
        session: sub.sessionKey.session,
        env: ctx.env,
        ...(sub.input.principalId !== undefined ? { principalId: sub.input.principalId } : {}),
      });
    } catch (err) {
      // The agent's own code threw: fail at once, with where (ADR 0052). Retrying would run the
      // same code on the same input again, so a typo or a missing variable would take minutes of
      // backoff to show; the stack points at the line.
      await fail("run_failed", initializeFailure(sub.sessionKey.agent, err));
      return {};
    }
    try {
      validateAgentSetup(setup);
    } catch (err) {
      await fail("run_failed", errorText(err));
      return {};
    }

    // Budgets are recomputed from durable state on every claim (a restart keeps the remainder).
    const { maxAttempts, submissionTimeoutMs: timeoutMs, turnTimeoutMs, toolTimeoutMs } = agentBudgets(setup);
    progress.bound(turnTimeoutMs, toolTimeoutMs);
    const now = ctx.clock.now();
    if (sub.attemptCount > maxAttempts) {
      await fail("attempt_budget_exhausted", attemptBudgetExhausted(sub, maxAttempts));
      return {};
    }
    if (now > budgetStart(sub) + timeoutMs) {
      await fail(
        "timeout_exceeded",
        `durability timeout exceeded: admitted ${formatDuration(now - budgetStart(sub))} ago (budget ${formatDuration(timeoutMs)})` +
          (sub.lastError ? `; last error: ${sub.lastError}` : ""),
      );
      return {};
    }

    // The agent's result schema is the default of its dispatches (a dispatch's own wins).
    const schema = definition!.resultSchema;
    const run = schema !== undefined && sub.input.resultSchema === undefined && sub.input.kind !== "compact" ? { ...sub, input: { ...sub.input, resultSchema: schema } } : sub;
    for (;;) {
      const outcome = await driveIntercepted(ctx, run, log, setup, attemptAbort.signal, cancelAbort.signal, options.shouldYield);
      const reason = attemptAbort.signal.aborted ? String(attemptAbort.signal.reason) : undefined;
      if (reason === ABORT_LEASE_LOST || reason === ABORT_ABANDON) return {}; // someone else owns it now, or we "crashed"
      if (outcome.kind === "interrupted" || reason === ABORT_SHUTDOWN) {
        await heartbeat.stop();
        // Not shutting down (an append refused while the lease still held): nothing else would
        // ring the released head but the sweep.
        if ((await releaseQuietly(ctx, sub, attemptId, {})) && reason !== ABORT_SHUTDOWN) await ring(ctx, sub);
        return {};
      }
      if (outcome.kind === "continuation") {
        await heartbeat.stop();
        ctx.observe({ type: "recovery", correlation, decision: "continuation", detail: "handing the run to a new invocation" });
        if (await releaseQuietly(ctx, sub, attemptId, { continuation: true })) await ring(ctx, sub);
        return {};
      }
      if (outcome.kind === "backpressure") {
        await heartbeat.stop();
        // Not a failure: the time budget bounds the waiting, the attempt budget is not charged
        // (the next claim is free, like a continuation's).
        const at = ctx.clock.now();
        const deadline = budgetStart(sub) + timeoutMs;
        const asked = backpressureDelayMs(outcome, at - budgetStart(sub));
        if (outcome.retryAfterMs !== undefined && at + asked > deadline) {
          await fail(
            "timeout_exceeded",
            `durability timeout exceeded: the provider asked to wait ${formatDuration(asked)}, past the budget of ${formatDuration(timeoutMs)}; last error: ${outcome.error}`,
          );
          return {};
        }
        const notBefore = Math.min(at + asked, deadline);
        ctx.observe({
          type: "recovery",
          correlation,
          decision: "provider_backpressure",
          detail: `${outcome.reason.replace("_", " ")}: next attempt in ${notBefore - at}ms, no attempt charged: ${outcome.error}`,
        });
        const retry = retryOf(outcome);
        await tellRetrying(log, { ...retry, error: outcome.error, nextAttemptAt: new Date(notBefore).toISOString(), attemptCount: sub.attemptCount, maxAttempts });
        const released = await releaseQuietly(ctx, sub, attemptId, { lastError: outcome.error, continuation: true, notBefore, retry });
        return released ? { notBefore } : {};
      }
      if (outcome.kind === "transient") {
        await heartbeat.stop();
        const delayMs = transientBackoffMs(ctx.claimIntervalMs, sub.attemptCount);
        ctx.observe({
          type: "recovery",
          correlation,
          decision: "transient_backoff",
          detail: `transient error, fresh attempt in ${delayMs}ms: ${outcome.error}`,
        });
        const retry = retryOf({ reason: "transient", ...(outcome.status !== undefined ? { status: outcome.status } : {}) });
        const nextAttemptAt = new Date(ctx.clock.now() + delayMs).toISOString();
        await tellRetrying(log, { ...retry, error: outcome.error, nextAttemptAt, attemptCount: sub.attemptCount, maxAttempts });
        // Back off here, then hand the row back: SQS FIFO cannot delay a single message, and the
        // backoff (≤ 5 s) is far inside the lease.
        try {
          await ctx.clock.sleep(delayMs, AbortSignal.any([attemptAbort.signal, cancelAbort.signal]));
        } catch {
          // shutting down (release at once) or cancelled
        }
        if (attemptAbort.signal.reason === ABORT_ABANDON) return {};
        const cancelled = cancelAbort.signal.reason as Cancellation | undefined;
        if (cancelled && !attemptAbort.signal.aborted) {
          await fail(cancelled.errorCode, cancelled.error);
          return {};
        }
        if (await releaseQuietly(ctx, sub, attemptId, { lastError: outcome.error, retry })) await ring(ctx, sub);
        return {};
      }
      await heartbeat.stop();
      if (outcome.kind === "waiting") {
        await ctx.faults?.("parking", sub.id);
        const parked = await park(ctx, sub, attemptId, outcome.entries, budgetStart(sub) + timeoutMs);
        // Cancelled after the last renewal: settled here, and its children with it (the cascade).
        if (typeof parked === "object") await fail(parked.cancelled.errorCode, parked.cancelled.error);
        return {};
      }
      const settled =
        outcome.kind === "failed"
          ? await settle(ctx, sub, log, settledPayloadOf(outcome), { mayOpenLog: true })
          : await settle(ctx, sub, log, settledPayloadOf(outcome), { requireDrainedInbox: true });
      if (settled !== "inbox_not_drained") return {};
      // A steer or follow-up arrived after the last turn: run again to deliver it.
      heartbeat.restart();
    }
  } catch (err) {
    // A store failure mid-attempt: hand the row back for a fresh attempt (if the release fails
    // too, the error reaches the queue consumer, which backs off; the lease then expires).
    ctx.observe({ type: "recovery", correlation, decision: "transient_backoff", detail: `attempt aborted: ${errorText(err)}` });
    await heartbeat.stop();
    if (await releaseQuietly(ctx, sub, attemptId, { lastError: errorText(err), retry: { reason: "transient" } })) await ring(ctx, sub);
    return {};
  } finally {
    options.signal.removeEventListener("abort", onProcessAbort);
    if (ctx.heartbeats?.get(sub.id) === heartbeat.beatNow) ctx.heartbeats.delete(sub.id);
    await heartbeat.stop();
  }
}

/** At most this many lines of an initializer's stack go into the settled error. */
const INITIALIZE_STACK_LINES = 8;

/**
 * The harness's own source tree (`src/` or `dist/`, this module's parent) when it runs unbundled:
 * its frames (the queue, the engine) are not the agent's. In a bundle it cannot be told apart.
 */
const HARNESS_TREE = /[\\/](src|dist)[\\/]engine$/.test(import.meta.dirname) ? import.meta.dirname.replace(/engine$/, "") : undefined;

/**
 * `agent <name>: initialize threw: <stack>`: the error and the frames that lead to it, the
 * harness's own frames (its source tree, node_modules, node:internal) left out, within
 * {@link INITIALIZE_STACK_LINES}.
 */
export function initializeFailure(agent: string, err: unknown): string {
  if (!(err instanceof Error)) return `agent ${agent}: initialize threw: ${String(err)}`;
  const [first, ...frames] = String(err.stack ?? `${err.name}: ${err.message}`).split("\n");
  const own = frames.filter(
    (f) => /^\s+at /.test(f) && !/node_modules|node:internal|\/src\/engine\/|\/dist\/engine\//.test(f) && (HARNESS_TREE === undefined || !f.includes(HARNESS_TREE)),
  );
  const head = first!.includes(err.message) ? first! : `${err.name}: ${err.message}`;
  return [`agent ${agent}: initialize threw: ${head}`, ...own.slice(0, INITIALIZE_STACK_LINES).map((f) => f.trimEnd())].join("\n");
}

/**
 * The session driver, with pi's agent loop and the JSON Schema validator behind it, loads on the
 * first attempt (or when a runtime starts consuming work): a process that only admits, sweeps or
 * settles (the serverless http and sweeper functions) never parses it, and with code splitting
 * never even loads it (ADR 0010).
 */
export function loadSessionDriver(): Promise<typeof import("../drive/drive.ts")> {
  return import("../drive/drive.ts");
}

async function driveIntercepted(
  ctx: AttemptContext,
  sub: Submission,
  log: AttemptLogWriter,
  setup: AgentSetup,
  signal: AbortSignal,
  cancel: AbortSignal,
  shouldYield: (() => boolean) | undefined,
): Promise<DriveOutcome> {
  let outcome: DriveOutcome | undefined;
  try {
    const { drive } = await loadSessionDriver();
    const info: OpInfo = { kind: "attempt", correlation: log.correlation, attemptCount: sub.attemptCount };
    if (sub.parentSubmissionId !== undefined && sub.parentCallId !== undefined) {
      info.parent = { submissionId: sub.parentSubmissionId, callId: sub.parentCallId };
    }
    await runInterceptors(ctx.interceptors, info, async () => {
      outcome = await drive({
        log,
        clock: ctx.clock,
        input: sub.input,
        resume: sub.pendingResume,
        setup,
        flushPolicy: ctx.flushPolicy,
        observe: ctx.observe,
        interceptors: [...ctx.interceptors],
        signal,
        cancel,
        shouldYield: shouldYield ?? (() => false),
        deadline: budgetStart(sub) + agentBudgets(setup).submissionTimeoutMs,
        faults: ctx.faults && ((phase) => ctx.faults!(phase, sub.id)),
        tasks: taskSpawner(ctx, sub),
        closeCallback: (callId, error) => closeCallback(ctx, sub, callId, error),
        scheduleMessage: (callId, message) => scheduleFollowUp(ctx, sub, callId, message),
        attachments: async (digest) => {
          try {
            return (await ctx.store.getAttachment(digest)).data;
          } catch (err) {
            if (isHarnessError(err, "attachment_not_found")) return undefined;
            throw err;
          }
        },
      });
    });
  } catch (err) {
    if (signal.aborted) return { kind: "interrupted" };
    return { kind: "failed", errorCode: "run_failed", error: errorText(err) };
  }
  if (!outcome) return { kind: "failed", errorCode: "run_failed", error: "attempt aborted by an interceptor" };
  return outcome;
}

/**
 * Renews the lease every third of its duration; a lost lease aborts the attempt, and a renewal
 * that answers `cancelRequested` calls `onCancel` (the owner's one way to learn of a cancel: no
 * extra read, no poll loop). Stops renewing once the attempt's store calls have stalled (the
 * lease then lapses and the sweep reclaims it). `beatNow` renews at once (a cancel made in this
 * process).
 */
function startHeartbeat(
  ctx: AttemptContext,
  sub: Submission,
  attemptAbort: AbortController,
  progress: StoreProgress,
  onCancel: (cancellation: Cancellation) => void,
) {
  let stopper = new AbortController();
  let wake = new AbortController();
  let loop: Promise<void> = Promise.resolve();
  const run = (stop: AbortSignal) => {
    loop = (async () => {
      for (;;) {
        try {
          await ctx.clock.sleep(ctx.leaseMs / 3, AbortSignal.any([stop, attemptAbort.signal, wake.signal]));
        } catch {
          if (stop.aborted || attemptAbort.signal.aborted) return;
          wake = new AbortController();
        }
        if (progress.stalled) {
          ctx.observe({
            type: "recovery",
            correlation: correlationOf(sub, sub.attemptId),
            decision: "lease_reclaimed",
            detail: "no store call of the attempt has returned for longer than its turn and tool bounds: the lease is left to lapse",
          });
          return;
        }
        try {
          const renewed = await ctx.store.renewLease({
            submissionId: sub.id,
            attemptId: sub.attemptId!,
            leaseExpiresAt: ctx.clock.now() + ctx.leaseMs,
          });
          if (renewed.cancelRequested) onCancel(renewed.cancellation ?? { errorCode: "cancelled", error: "cancelled: cancelled by request" });
        } catch (err) {
          if (isHarnessError(err, "claim_lost")) {
            attemptAbort.abort(ABORT_LEASE_LOST);
            return;
          }
          // A transient store error: try again at the next beat; the lease has slack.
        }
      }
    })();
  };
  run(stopper.signal);
  return {
    async stop() {
      stopper.abort();
      await loop;
    },
    restart() {
      stopper = new AbortController();
      run(stopper.signal);
    },
    beatNow: () => wake.abort(),
  };
}

/** The settled payload of a drive's settling outcome: status, result or error, usage and cost, the context marker. */
export function settledPayloadOf(outcome: Extract<DriveOutcome, { kind: "completed" | "failed" }>): SettledPayload {
  const payload: SettledPayload =
    outcome.kind === "completed"
      ? { status: "succeeded", ...(outcome.result !== undefined ? { result: outcome.result } : {}) }
      : { status: "failed", error: outcome.error, errorCode: outcome.errorCode };
  if (outcome.usage !== undefined) {
    payload.usage = outcome.usage.usage;
    if (outcome.usage.cost !== undefined) payload.cost = outcome.usage.cost;
  }
  if (outcome.kind === "failed" && outcome.excludedFromContext) payload.excludedFromContext = true;
  return payload;
}

/**
 * Closes a deferred call's callback whose `start` failed: its call wait is answered (expired,
 * with the failure) so the id answers 404; the call's outcome is the tool's error, recorded by the
 * drive.
 */
async function closeCallback(ctx: AttemptContext, sub: Submission, callId: string, error: string): Promise<void> {
  const wait = await ctx.store.getCallWait(sub.id, callId);
  if (wait !== undefined) await answerCallWait(ctx, sub, wait, { kind: "callback", error, expired: true, answeredAt: ctx.clock.now() });
}

/** The row's reason for a retry: the reason, and the provider's status when it answered. */
function retryOf(cause: { reason: SubmissionRetry["reason"]; status?: number }): SubmissionRetry {
  return cause.status === undefined ? { reason: cause.reason } : { reason: cause.reason, status: cause.status };
}

/**
 * Tells the conversation's readers why the run waits for its next try (ADR 0053): a
 * `submission_retrying` record, fenced like the attempt's others, before the release that hands
 * the row back (which says it too). Best effort: a failed append leaves the row to say it.
 */
async function tellRetrying(log: AttemptLogWriter, payload: SubmissionRetryingPayload): Promise<void> {
  try {
    await log.append([log.draft("submission_retrying", payload)]);
  } catch {
    // Lost the claim (the release then fails too) or the store failed: the row still says why.
  }
}

/** Rings the released submission's doorbell so a fresh claim picks it up. */
function ring(ctx: AttemptContext, sub: Submission): Promise<void> {
  return ctx.queue.ring(doorbellOf(sub));
}

/** Releases the row; false when the release lost its CAS (someone else owns it now). */
async function releaseQuietly(
  ctx: AttemptContext,
  sub: Submission,
  attemptId: string,
  extra: { lastError?: string; continuation?: boolean; notBefore?: number; retry?: SubmissionRetry },
): Promise<boolean> {
  try {
    await ctx.store.releaseSubmission({ submissionId: sub.id, attemptId, ...extra });
    return true;
  } catch (err) {
    if (isHarnessError(err, "claim_lost")) return false;
    throw err;
  }
}

/** The reference system's exact `attempt_budget_exhausted` message. */
export function attemptBudgetExhausted(sub: Submission, maxAttempts: number): string {
  const last = sub.lastError ? `; last error: ${sub.lastError}` : "";
  return `attempt budget exhausted: attempt ${sub.attemptCount} exceeds max ${maxAttempts}${last}`;
}
