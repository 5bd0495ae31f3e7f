import type { AgentDefinition } from "../agent/agent-definition.ts";
import type { SubagentLimits, SubagentPolicy } from "../agent/subagent-policy.ts";
import type { EnginePhase } from "../engine/engine-context.ts";
import type { Clock } from "../ports/clock.ts";
import type { DirectUploads } from "../ports/direct-uploads.ts";
import type { HarnessEvent, Interceptor, Observer } from "../ports/observer.ts";
import type { ConsumableQueue, WorkQueue } from "../ports/queue.ts";
import type { AttachmentPolicy, DEFAULT_ATTACHMENT_POLICY } from "../protocol/attachment-policy.ts";
import type { Store } from "../store/store.ts";
import type { Authorize } from "../protocol/principal.ts";
import type { ownerPolicy } from "../auth/owner-policy.ts";
import type { RUNTIME_DEFAULTS } from "./defaults.ts";

/** Configuration of an embedded runtime. Only `agents` and `store` are required. */
export interface RuntimeConfig {
  /** Agent definitions by name. */
  agents: Record<string, AgentDefinition>;
  store: Store;
  /**
   * Default: an in-process queue. A queue that is only a `WorkQueue` (e.g. SQS) is rung but not
   * consumed here: its consumer (a Lambda) calls `deliver`.
   */
  queue?: WorkQueue | ConsumableQueue;
  /** Default: the wall clock. */
  clock?: Clock;
  /** Secrets and settings for initializers; default: `process.env`. */
  env?: (name: string) => string;
  /** Lease per attempt (heartbeat at a third). Default {@link RUNTIME_DEFAULTS}`.leaseMs` (30 s). */
  leaseMs?: number;
  /** Transient-backoff base. Default 250 ms. */
  claimIntervalMs?: number;
  /**
   * Delta batching. Default 1024 B / 200 ms (embedded stores may flush smaller and sooner). A
   * message's first fragment of each kind is written at once whatever the policy (ADR 0036).
   */
  flushPolicy?: { bytes: number; intervalMs: number };
  observers?: Observer[];
  /** First registered is outermost. */
  interceptors?: Interceptor[];
  /** How often the sweep runs. Default 5 s. */
  sweepIntervalMs?: number;
  /**
   * Delete a conversation once it has been idle this long (ms): no record appended to it for
   * that time (its last activity, not its creation). Off by default. The sweep deletes it as
   * `DELETE /agents/:agent/:instance` does (records, submissions, checkpoint, subagents'
   * conversations, the attachments only it references), at most once a minute; a conversation
   * with an unsettled submission (a run waiting for an approval, say) stays until it settles. Needs
   * a store that lists idle conversations (memory, SQLite); not yet the DynamoDB store.
   */
  conversationRetentionMs?: number;
  /** Attempts running at once in this process. Default 64. */
  concurrency?: number;
  /** Where observer failures are reported. Default: console.error. */
  onObserverError?: (err: unknown, event: HarnessEvent) => void;
  /**
   * The fault seam for crash tests (`ports/faults.ts`): called at every named phase, which waits
   * for what it returns. Default: the process's hook if a test installed one, else none.
   */
  faults?: (phase: EnginePhase, submissionId: string) => void | Promise<void>;
  /**
   * Durable subagents: parent agent name → the agent names it may spawn through its `task` tool
   * (each child a durable submission of its own; the parent waits for free). An agent that is no
   * key gets no `task` tool. Checked here: every name must be an agent.
   */
  subagents?: SubagentPolicy;
  /**
   * Defaults: `maxChildrenPerRun` 8, `maxDepth` 1 (children get no `task` tool), `maxChildWaitMs`
   * unbounded, `onParentTerminal` "cancel_children".
   */
  subagentLimits?: SubagentLimits;
  /**
   * Media types accepted as attachments and the largest size of each (bytes). Default
   * {@link DEFAULT_ATTACHMENT_POLICY}: PNG, JPEG, GIF and WebP images up to 5 MiB; plain text,
   * Markdown, CSV and JSON up to 1 MiB; PDFs up to 32 MiB.
   */
  attachmentPolicy?: AttachmentPolicy;
  /**
   * Who may do what (ADR 0043): asked by `Runtime.as(principal)` before each request of that
   * caller. Default {@link ownerPolicy}: a principal reaches the agent instances whose id is its
   * own, the operator every one. Without an authenticator every caller is the operator.
   */
  authorize?: Authorize;
  /** Large uploads straight to blob storage (S3 on AWS); without it `createAttachmentUpload` is `uploads_unsupported`. */
  directUploads?: DirectUploads;
  /**
   * Lets the operator call an agent's tools directly with arguments (`Runtime.callTool`, the
   * console's Tools view, ADR 0054): for development (`harness dev` turns it on). A direct call
   * skips the tool's approval and writes nothing to any log. Default false: 403 `forbidden`.
   */
  directToolCalls?: boolean;
}
