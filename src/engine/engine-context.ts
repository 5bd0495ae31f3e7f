import type { SettledPayload } from "../protocol/records.ts";
import type { Clock } from "../ports/clock.ts";
import type { HarnessEvent, Interceptor } from "../ports/observer.ts";
import type { WorkQueue } from "../ports/queue.ts";
import type { AdmissionStore, AttachmentStore, CallWaitStore, CancelStore, ClaimStore, LogStore, ParentChildStore, Store } from "../store/store.ts";
import type { Submission } from "../store/submission.ts";
import type { FaultHook, FaultPhase } from "../ports/faults.ts";
import type { AgentDefinition } from "../agent/agent-definition.ts";
import type { Subagents } from "./subagents.ts";

/** Points where a test may inject a fault (e.g. simulate a crash): the fault seam's phases. */
export type EnginePhase = FaultPhase;

/** Why an attempt's signal was aborted. */
export const ABORT_SHUTDOWN = "shutdown";
export const ABORT_ABANDON = "abandon";
export const ABORT_LEASE_LOST = "lease_lost";

/**
 * Everything the engine's functions share; built once by the runtime (or a Lambda handler) with
 * the whole `Store`. Each engine function names the store role it needs (`EngineContext<Role>`).
 */
export interface EngineContext<S = Store> {
  store: S;
  queue: WorkQueue;
  clock: Clock;
  /** This process's (or invocation's) owner id. */
  ownerId: string;
  definitions: ReadonlyMap<string, AgentDefinition>;
  env: (name: string) => string;
  leaseMs: number;
  /** Base of the transient backoff. */
  claimIntervalMs: number;
  flushPolicy: { bytes: number; intervalMs: number };
  /** Exception-safe fan-out to observers. */
  observe: (event: HarnessEvent) => void;
  interceptors: readonly Interceptor[];
  /** Called after every settlement this engine performs (wakes in-process waiters). */
  onSettled: (submissionId: string, payload: SettledPayload) => void;
  /** The fault seam (`ports/faults.ts`) for crash tests; resolves to continue. */
  faults?: FaultHook;
  /** A `terminalizing` row older than this is treated as crashed mid-settlement. */
  settlementGraceMs: number;
  /**
   * The lease heartbeats of the attempts running in this process, by submission id: a cancel
   * made here has the attempt renew at once (and so learn of it) instead of at its next beat.
   */
  heartbeats?: Map<string, () => void>;
  /**
   * The orphan cascade (`cascadeToChildren`, `cancel.ts`), which a settlement runs inside its
   * reservation, before its finalize. Wired by the runtime: settlement does not import cancel.
   */
  cascade?: (parent: Submission) => Promise<unknown>;
  /** The subagent policy and limits (none: no agent has the `task` tool; the cascade defaults on). */
  subagents?: Subagents;
  /**
   * The embedded runtime's delay timer: admission hands it each delayed message it stored (a
   * `notBefore` dispatch, a `schedule_message` call's), to be released at its time (ADR 0025).
   * Absent (a Lambda function), the sweep releases it.
   */
  delayTimer?: (submissionId: string, at: number) => void;
}

/**
 * What running an attempt needs: its claim and lease, its conversation's log, its parent and
 * children (a `task` call admits a child, a settlement wakes a parent or cancels children), and
 * its calls' waits (the park delivers answers that came first, ADR 0025).
 */
export type AttemptContext = EngineContext<
  ClaimStore & LogStore & ParentChildStore & CallWaitStore & CancelStore & AdmissionStore & Pick<AttachmentStore, "getAttachment">
>;

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}
