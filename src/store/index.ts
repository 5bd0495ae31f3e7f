/**
 * `resolute-harness/store`: the adapter SPI, for writing a store or a queue of your own. A `Store`
 * keeps submissions, conversation logs, inboxes and attachments, every transition one atomic
 * compare-and-set; a `WorkQueue` carries doorbells (ids only: the store stays the truth). Every
 * store adapter must pass the shared conformance suite, `resolute-harness/store/conformance`.
 *
 * @example Running the conformance suite against an adapter (in a vitest file):
 * ```ts
 * import { describeStoreConformance } from "resolute-harness/store/conformance";
 * import { createMemoryStore } from "resolute-harness/memory";
 *
 * describeStoreConformance("memory", async (clock) => createMemoryStore({ clock }));
 * ```
 *
 * @module
 */
export type * from "./store.ts";
export type * from "./submission.ts";
export type * from "./child-outcome.ts";
export type * from "./call-wait.ts";
export type * from "./activity.ts";
export { ACTIVITY_STATES, activityCursor, activityStateOf, matchesActivity, parseActivityCursor } from "./activity.ts";
export { callWaitOf, sameAnswer } from "./call-wait.ts";
export { cancelledOutcome, firstWaitCheck, isRunInFlight, pendingEntries, sessionKeyString } from "./submission.ts";
export type { LogCheckpoint } from "../conversation/checkpoint.ts";
export type { AttachmentRef, ConversationRecord, RecordDraft } from "../protocol/records.ts";
export { doorbellOf, type ConsumableQueue, type Doorbell, type DoorbellHandler, type DoorbellOutcome, type WorkQueue } from "../ports/queue.ts";
export { InProcessQueue } from "../runtime/in-process-queue.ts";
export type { DeadLetterOutcome } from "../engine/dead-letter.ts";
export type { SweepReport } from "../engine/sweep.ts";
export type { EnginePhase } from "../engine/engine-context.ts";
export type { FaultHook, FaultPhase } from "../ports/faults.ts";
export type { CompletedUpload, DirectUpload, DirectUploadRequest, DirectUploads } from "../ports/direct-uploads.ts";
export type { AttachmentUpload, DirectUploadDeclaration } from "../runtime/attachments.ts";
export type { ConversationDeletionReport } from "../engine/conversation-deletion.ts";
export type { ForkAnswer, ForkRequest } from "../runtime/fork-request.ts";
export type { ForkResult } from "../engine/conversation-fork.ts";
export type { ConversationExport } from "../engine/conversation-export.ts";
export type { ExportAttachmentLine, ExportEnd, ExportHeader, ExportLine, ExportRecordLine, ImportAnswer } from "../protocol/conversation-export.ts";
