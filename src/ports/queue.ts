import { sessionKeyString, type Submission } from "../store/submission.ts";

/**
 * The work queue is a doorbell: a message carries only ids, and the store stays the truth.
 * A consumer always re-reads state and claims with a compare-and-set, so duplicate or stale
 * doorbells are harmless. Delivery is FIFO per session (message group = session key).
 */
export interface Doorbell {
  submissionId: string;
  /** The FIFO group: its session key's string form (`sessionKeyString`), one run at a time. */
  group: string;
}

/** The doorbell of a submission: its id, in its session's FIFO group. */
export function doorbellOf(sub: Pick<Submission, "id" | "sessionKey">): Doorbell {
  return { submissionId: sub.id, group: sessionKeyString(sub.sessionKey) };
}

/** What the consumer decided about one delivery. */
export type DoorbellOutcome =
  | { kind: "ack" }
  /** Deliver again after `delayMs` (a live lease elsewhere, a transient failure). */
  | { kind: "retry"; delayMs: number };

export type DoorbellHandler = (doorbell: Doorbell) => Promise<DoorbellOutcome>;

/** The sending side, used by admission, settlement (ring the next head) and the sweeper. */
export interface WorkQueue {
  ring(doorbell: Doorbell, options?: { delayMs?: number }): Promise<void>;
}

/** A queue whose consumer runs in this process (the embedded shape). */
export interface ConsumableQueue extends WorkQueue {
  /** Starts delivering to `handler`, at most `concurrency` doorbells at once, one per group. */
  start(handler: DoorbellHandler, options?: { concurrency?: number }): void;
  /** Stops delivering and waits for in-flight handlers. */
  close(): Promise<void>;
}
