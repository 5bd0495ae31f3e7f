import { activityPage, retrySubmission } from "./activity-view.ts";
import { callToolDirectly } from "./direct-tool-call.ts";
import { InvalidRequest, isHarnessError, RuntimeClosed, SubmissionNotFound } from "../errors.ts";
import { newId } from "../conversation/ids.ts";
import type { ConversationRecord, SettledPayload } from "../protocol/records.ts";
import { admit, type DispatchResult } from "../engine/admission.ts";
import { admitCompaction } from "../engine/compaction-admission.ts";
import { handleDeadLetter, type DeadLetterOutcome } from "../engine/dead-letter.ts";
import {
  ABORT_ABANDON,
  ABORT_SHUTDOWN,
  type AttemptContext,
  type EngineContext,
} from "../engine/engine-context.ts";
import { loadSessionDriver } from "../engine/attempt.ts";
import { cancellationFor, cancelSubmission, cascadeToChildren, type CancelResult } from "../engine/cancel.ts";
import { sweep, type SweepReport } from "../engine/sweep.ts";
import { retentionSweep } from "../engine/conversation-retention.ts";
import { deleteSessionConversation, type ConversationDeletionReport } from "../engine/conversation-deletion.ts";
import { forkConversation } from "../engine/conversation-fork.ts";
import type { ForkAnswer, ForkRequest } from "./fork-request.ts";
import { exportConversation, type ConversationExport } from "../engine/conversation-export.ts";
import { importConversation } from "../engine/conversation-import.ts";
import type { ImportAnswer } from "../protocol/conversation-export.ts";
import { resolveSubagents } from "../engine/subagents.ts";
import { handleDoorbell } from "../engine/worker.ts";
import { systemClock } from "../ports/clock.ts";
import type { HarnessEvent } from "../ports/observer.ts";
import type { ConsumableQueue, DoorbellOutcome, Doorbell, WorkQueue } from "../ports/queue.ts";
import type { Conversation, InboxKind, Submission } from "../store/submission.ts";
import { processFaults } from "../ports/faults.ts";
import { InProcessQueue } from "./in-process-queue.ts";
import { AppendNotifier } from "./append-notifier.ts";
import { RUNTIME_DEFAULTS } from "./defaults.ts";
import {
  checkAgentNames,
  checkCallbackAnswer,
  checkCallbackBody,
  checkCancel,
  checkDecision,
  checkDispatch,
  checkInject,
  checkRecordOffset,
  checkSubmissionAddress,
  checkSubmissionId,
  checkSubmissionList,
  sessionKeyOf,
  type DecisionRequest,
  type DispatchRequest,
  type InstanceAddress,
  type SessionAddress,
  type SteerRequest,
  type SubmissionAddress,
  type SubmissionListRequest,
} from "./requests.ts";
import { listSubmissionPage, submissionDetail } from "./submission-view.ts";
import { RuntimeAttachments, type AttachmentUpload, type DirectUploadDeclaration } from "./attachments.ts";
import { checkAttachmentPolicy, DEFAULT_ATTACHMENT_POLICY, type AttachmentPolicy } from "../protocol/attachment-policy.ts";
import type { RuntimeConfig } from "./runtime-config.ts";
import { SettledWaiters } from "./settled-waiters.ts";
import type { DirectUpload } from "../ports/direct-uploads.ts";
import type { AttachmentRef } from "../protocol/records.ts";
import { type SubmissionDetail, type SubmissionPage } from "../protocol/submission-view.ts";
import type { Principal } from "../protocol/principal.ts";
import { callerRuntime, type CallerRuntime } from "./caller-runtime.ts";
import type { RuntimeRequests } from "./runtime-requests.ts";
import { ownerPolicy } from "../auth/owner-policy.ts";
import { answerCallbackByCall, decide, DelayedMessageTimers, pendingApprovals, resolveCallback } from "./waits.ts";
import type { CallbackAnswer } from "../protocol/approvals.ts";

/**
 * The in-process API; the HTTP transport is a thin layer over it. Every method that takes a
 * request checks it against the request rules (`requests.ts`): a malformed id is
 * `InvalidRequest`, an unknown agent `UnknownAgent`, a message that breaks admission's rules
 * `InvalidDispatch`; nothing is stored for a refused request.
 */
export interface Runtime extends RuntimeRequests {
  /** Starts consuming work and the periodic sweep (which first recovers what a crash left). */
  start(): Promise<void>;
  /**
   * Stops. In-flight attempts are released (not failed) so a fresh runtime re-attempts at once.
   * `abandon: true` stops without writing anything — what a crash leaves (crash tests).
   */
  close(options?: { abandon?: boolean }): Promise<void>;
  /**
   * Handles one doorbell (what a queue consumer such as the worker Lambda calls): claim, run,
   * settle. `shouldYield` lets an invocation hand the run off before its time limit.
   */
  handleDoorbell(doorbell: Doorbell, options?: { shouldYield?: () => boolean }): Promise<DoorbellOutcome>;
  /**
   * Handles a doorbell the queue gave up on (the dead-letter consumer): settles
   * `attempt_budget_exhausted` only when the durable attempt budget is spent, else rings again.
   */
  handleDeadLetter(doorbell: Doorbell): Promise<DeadLetterOutcome>;
  /** Runs one sweep now (also runs on a timer once started). */
  sweep(options?: { staleQueuedMs?: number }): Promise<SweepReport>;
  /**
   * The runtime as `principal` reaches it (ADR 0043): each request method first asks the policy
   * (`RuntimeConfig.authorize`, default {@link ownerPolicy}) and refuses with `Forbidden` before
   * reading or writing anything, and records the principal's id on the messages and decisions
   * it sends (ADR 0043). What the HTTP app hands its routes, one per request. Without a principal:
   * a caller no authentication named (a server without `auth`), asked as the operator, recording no id.
   */
  as(principal?: Principal): CallerRuntime;
}

const CLOSE_DRAIN_MS = 10_000;

/** Builds a runtime; it is inert until `start`. */
export function createRuntime(config: RuntimeConfig): Runtime {
  const names = Object.keys(config.agents ?? {});
  try {
    checkAgentNames(names);
  } catch (err) {
    throw new Error(`createRuntime: ${(err as Error).message}`);
  }
  for (const name of names) {
    if (typeof config.agents[name]?.initialize !== "function") {
      throw new Error(`createRuntime: agent ${name} has no initialize function`);
    }
  }
  if (!config.store) throw new Error("createRuntime: a store is required");
  let subagents;
  try {
    subagents = resolveSubagents(config.subagents, config.subagentLimits, config.agents);
  } catch (err) {
    throw new Error(`createRuntime: ${(err as Error).message}`);
  }

  const clock = config.clock ?? systemClock;
  const notifier = new AppendNotifier();
  const store = notifier.wrap(config.store);
  const queue = config.queue ?? new InProcessQueue({ clock });
  const observers = [...(config.observers ?? [])];
  const onObserverError = config.onObserverError ?? ((err) => console.error("observer failed:", err));
  const settled = new SettledWaiters(store, clock);
  const processAbort = new AbortController();
  const sweepStop = new AbortController();
  const running = new Set<Promise<unknown>>();
  let state: "new" | "started" | "closed" = "new";
  let sweepLoop: Promise<void> = Promise.resolve();

  const observe = (event: HarnessEvent) => {
    for (const observer of observers) {
      try {
        observer(event);
      } catch (err) {
        onObserverError(err, event);
      }
    }
  };

  const retention = retentionSweep(store, config.conversationRetentionMs, () => clock.now());
  /** The sweep, then (when on, and due or `force`d) the retention sweep. */
  const sweepAll = async (staleQueuedMs: number, force: boolean): Promise<SweepReport> => {
    const report = await sweep(ctx, { staleQueuedMs });
    const expired = await retention?.(force);
    return expired === undefined ? report : { ...report, expiredConversations: expired };
  };
  const ctx: EngineContext = {
    store,
    queue,
    clock,
    ownerId: newId(clock.now()),
    definitions: new Map(Object.entries(config.agents)),
    env: config.env ?? ((name) => process.env[name] ?? ""),
    leaseMs: config.leaseMs ?? RUNTIME_DEFAULTS.leaseMs,
    claimIntervalMs: config.claimIntervalMs ?? RUNTIME_DEFAULTS.claimIntervalMs,
    flushPolicy: config.flushPolicy ?? RUNTIME_DEFAULTS.flushPolicy,
    observe,
    interceptors: [...(config.interceptors ?? [])],
    onSettled: (submissionId, payload) => settled.settled(submissionId, payload),
    faults: config.faults ?? processFaults(),
    settlementGraceMs: config.leaseMs ?? RUNTIME_DEFAULTS.leaseMs,
    heartbeats: new Map(),
    subagents,
  };
  ctx.cascade = (parent) => cascadeToChildren(ctx as AttemptContext, parent);
  const sweepIntervalMs = config.sweepIntervalMs ?? RUNTIME_DEFAULTS.sweepIntervalMs;
  const delayed = new DelayedMessageTimers(ctx, (err) =>
    observe({
      type: "recovery",
      correlation: { sessionKey: { agent: "", instance: "", session: "" }, conversationId: "" },
      decision: "lease_reclaimed",
      detail: `releasing a delayed message failed (the sweep retries it): ${err instanceof Error ? err.message : String(err)}`,
    }),
  );
  // Every admission of this runtime with a delay (a dispatch's, a schedule_message call's) arms it.
  ctx.delayTimer = (submissionId, at) => {
    if (state === "started") delayed.schedule(submissionId, at);
  };
  let attachmentPolicy: AttachmentPolicy;
  try {
    attachmentPolicy = config.attachmentPolicy === undefined ? DEFAULT_ATTACHMENT_POLICY : checkAttachmentPolicy(config.attachmentPolicy);
  } catch (err) {
    throw new Error(`createRuntime: ${(err as Error).message}`);
  }
  const attachments = new RuntimeAttachments(store, attachmentPolicy, config.directUploads);
  const knows = (name: string) => ctx.definitions.has(name);
  if (config.authorize !== undefined && typeof config.authorize !== "function") throw new Error("createRuntime: authorize must be a function");
  const authorize = config.authorize ?? ownerPolicy();

  /** Accepts a steer or follow-up message for the session's in-flight run (its inbox). */
  const acceptInboxMessage = async (kind: InboxKind, request: SteerRequest) => {
    if (state === "closed") throw new RuntimeClosed();
    const { key, body, principalId } = checkInject(request, knows);
    await store.enqueueInbox(key, { kind, body, ...(principalId === undefined ? {} : { principalId }) });
  };

  const runtime: Runtime = {
    async start() {
      if (state === "closed") throw new RuntimeClosed();
      if (state === "started") throw new Error("runtime already started");
      state = "started";
      if (!isConsumable(queue)) throw new Error("runtime.start: the queue is not consumable in this process");
      // This process runs attempts: load the session driver now, not inside the first one.
      await loadSessionDriver();
      queue.start(
        (doorbell) => runtime.handleDoorbell(doorbell),
        { concurrency: config.concurrency ?? RUNTIME_DEFAULTS.concurrency },
      );
      // Recover what a previous process left: its doorbells died with it.
      await sweepAll(0, false);
      sweepLoop = (async () => {
        for (;;) {
          try {
            await clock.sleep(sweepIntervalMs, sweepStop.signal);
          } catch {
            return;
          }
          try {
            await sweepAll(sweepIntervalMs, false);
          } catch (err) {
            observe({
              type: "recovery",
              correlation: { sessionKey: { agent: "", instance: "", session: "" }, conversationId: "" },
              decision: "lease_reclaimed",
              detail: `sweep failed: ${err instanceof Error ? err.message : String(err)}`,
            });
          }
        }
      })();
    },

    async close(options = {}) {
      if (state === "closed") return;
      state = "closed";
      sweepStop.abort();
      delayed.stop();
      settled.close();
      processAbort.abort(options.abandon ? ABORT_ABANDON : ABORT_SHUTDOWN);
      const queueClosed = isConsumable(queue) ? queue.close() : undefined;
      // A crash waits for nothing: hung work is simply left behind, as a dead process leaves it.
      if (options.abandon) return;
      const drained = Promise.allSettled([queueClosed, sweepLoop, ...running]);
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<"timeout">((resolve) => {
        timer = setTimeout(() => resolve("timeout"), CLOSE_DRAIN_MS);
      });
      const result = await Promise.race([drained, timedOut]);
      clearTimeout(timer);
      if (result === "timeout") throw new Error("close: timed out waiting for in-flight work");
    },

    async dispatch(request) {
      if (state === "closed") throw new RuntimeClosed();
      const checked = checkDispatch(request, knows);
      return admit(ctx, checked);
    },

    async decide(request) {
      if (state === "closed") throw new RuntimeClosed();
      return decide(ctx, checkDecision(request as DecisionRequest, knows));
    },

    callTool: async (call) => callToolDirectly(config.directToolCalls === true, ctx.definitions, ctx.env, call, knows),

    async answerCallback(submissionId, callId, answer) {
      if (state === "closed") throw new RuntimeClosed();
      if (typeof submissionId !== "string" || typeof callId !== "string" || submissionId === "" || callId === "") throw new InvalidRequest("a submission id and a call id are required");
      return answerCallbackByCall(ctx, submissionId, callId, checkCallbackBody(answer as CallbackAnswer));
    },

    async resolveCallback(callbackId, answer) {
      if (state === "closed") throw new RuntimeClosed();
      return resolveCallback(ctx, callbackId, checkCallbackAnswer(callbackId, answer as CallbackAnswer));
    },

    async pendingApprovals(address) {
      return pendingApprovals(store, sessionKeyOf(address, knows));
    },

    async compact(address) {
      if (state === "closed") throw new RuntimeClosed();
      return admitCompaction(ctx, sessionKeyOf(address, knows));
    },

    wait: (submissionId, options) => settled.wait(submissionId, options),

    async cancel(submissionId, reason, within) {
      if (state === "closed") throw new RuntimeClosed();
      checkCancel(submissionId, reason, within, knows);
      const sub = await store.getSubmission(submissionId);
      if (within && (sub.sessionKey.agent !== within.agent || sub.sessionKey.instance !== within.instance)) {
        throw new SubmissionNotFound(submissionId);
      }
      return cancelSubmission(ctx, sub, cancellationFor(reason));
    },
    steer: (request) => acceptInboxMessage("steer", request),
    followUp: (request) => acceptInboxMessage("followUp", request),
    records: async (conversationId, afterId, limit) => store.readRecords(conversationId, checkRecordOffset(afterId), limit),
    conversation: async (address) => store.getConversation(sessionKeyOf(address, knows)),
    async sessionLive(address) {
      return store.sessionLive(sessionKeyOf(address, knows));
    },
    listSubmissions: async (request) => listSubmissionPage(store, checkSubmissionList(request, knows)),
    submission: async (request) => submissionDetail(store, checkSubmissionAddress(request, knows)),
    activity: async (request) => activityPage(store, request),
    retry: async (submissionId) => retrySubmission(store, (request) => runtime.dispatch(request), submissionId),
    onAppend: (conversationId, listener) => notifier.subscribe(conversationId, listener),
    async handleDoorbell(doorbell, options = {}) {
      if (state === "closed") throw new RuntimeClosed();
      const work = handleDoorbell(ctx, doorbell, { signal: processAbort.signal, shouldYield: options.shouldYield });
      running.add(work);
      return work.finally(() => running.delete(work));
    },
    async handleDeadLetter(doorbell) {
      if (state === "closed") throw new RuntimeClosed();
      return handleDeadLetter(ctx, doorbell);
    },
    sweep: (options = {}) => sweepAll(options.staleQueuedMs ?? 0, true),
    async uploadAttachment(upload) {
      if (state === "closed") throw new RuntimeClosed();
      return attachments.upload(upload);
    },
    async createAttachmentUpload(declared) {
      if (state === "closed") throw new RuntimeClosed();
      return attachments.createUpload(declared);
    },
    async completeAttachmentUpload(uploadId, uploadedBy) {
      if (state === "closed") throw new RuntimeClosed();
      return attachments.completeUpload(uploadId, uploadedBy);
    },
    async deleteConversation(request) {
      if (state === "closed") throw new RuntimeClosed();
      const key = sessionKeyOf(request, knows);
      if (request.cancel !== undefined && typeof request.cancel !== "boolean") throw new InvalidRequest("cancel must be a boolean");
      const cancel = async (sub: Submission) => {
        try {
          await cancelSubmission(ctx, sub, cancellationFor("the conversation is being deleted"));
        } catch (err) {
          if (!isHarnessError(err, "already_settled")) throw err;
        }
      };
      return deleteSessionConversation(store, key, request.cancel ? { cancel, settleTimeoutMs: 2 * (config.leaseMs ?? RUNTIME_DEFAULTS.leaseMs) } : {});
    },
    async fork(request) {
      if (state === "closed") throw new RuntimeClosed();
      const source = sessionKeyOf(request, knows);
      if (typeof request.fromRecordId !== "string" || request.fromRecordId === "") throw new InvalidRequest("fromRecordId is required");
      const now = clock.now();
      const target = sessionKeyOf({ agent: source.agent, instance: request.targetInstance ?? source.instance, session: request.targetSession ?? `fork-${newId(now).toLowerCase()}` }, knows);
      // A message its dispatch would refuse is refused before anything is copied.
      if (request.message !== undefined) checkDispatch({ ...target, message: request.message }, knows);
      const forked = await forkConversation(store, source, request.fromRecordId, target, now);
      const answer: ForkAnswer = { agent: target.agent, instance: target.instance, session: target.session, ...forked };
      if (request.message === undefined) return answer;
      const admitted = await runtime.dispatch({ agent: target.agent, instance: target.instance, session: target.session, message: request.message });
      return { ...answer, submissionId: admitted.submissionId };
    },
    async exportConversation(address) {
      if (state === "closed") throw new RuntimeClosed();
      return exportConversation(store, sessionKeyOf(address, knows));
    },
    async importConversation(address, text) {
      if (state === "closed") throw new RuntimeClosed();
      return importConversation({ store, policy: attachments.policy, now: clock.now() }, sessionKeyOf(address, knows), text);
    },
    attachment: (digest) => store.getAttachment(digest),
    attachmentLimits: () => ({ policy: attachments.policy, directUploads: attachments.directUploads }),
    hasAgent: knows,
    agentCatalog: () =>
      [...ctx.definitions].map(([name, definition]) => ({
        name,
        ...(typeof definition.description === "string" ? { description: definition.description } : {}),
        ...(definition.resultSchema !== undefined ? { resultSchema: definition.resultSchema } : {}),
      })),
    async locateSubmission(submissionId) {
      checkSubmissionId(submissionId);
      const sub = await store.getSubmission(submissionId);
      return { agent: sub.sessionKey.agent, instance: sub.sessionKey.instance, submissionId: sub.id };
    },
    as: (principal) => callerRuntime(runtime, principal, authorize, store),
  };
  return runtime;
}

function isConsumable(queue: WorkQueue | ConsumableQueue): queue is ConsumableQueue {
  return typeof (queue as ConsumableQueue).start === "function";
}
