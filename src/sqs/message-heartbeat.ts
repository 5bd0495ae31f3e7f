import type { SQSClient } from "@aws-sdk/client-sqs";
import { changeMessageVisibility } from "./sqs-queue.ts";

export interface MessageHeartbeatOptions {
  client: SQSClient;
  queueUrl: string;
  receiptHandle: string;
  /** The engine's lease: the message is kept invisible for about this long past each beat. */
  leaseMs: number;
  /** When the handler got the message (epoch ms), for SQS's 12-hour cap (default now). */
  heldSinceMs?: number;
  /** A failed visibility change (the attempt goes on: the store's lease is what fences it). */
  onError?: (err: unknown) => void;
}

/** A running visibility heartbeat of one received message. */
export interface MessageHeartbeat {
  /**
   * Settles once the first beat has landed (or failed): from then on a death of this process
   * brings the message back within about one lease.
   */
  readonly first: Promise<void>;
  /** Stops beating and waits for a change in flight, so a later change is not overtaken. */
  stop(): Promise<void>;
}

/**
 * Holds a received message the way the engine holds its lease (DESIGN §3): at once lowers the
 * message's visibility from the queue default (≥ the function timeout) to about one lease, then
 * extends it to one lease every lease/3. A worker that dies stops beating, so its doorbell comes
 * back within about one lease and the next worker reclaims the expired lease. The consumer waits
 * for the first beat before it handles the doorbell (ADR 0028): a claim is never made under a
 * message that would stay hidden for the queue's full visibility timeout.
 */
export function startMessageHeartbeat(options: MessageHeartbeatOptions): MessageHeartbeat {
  const { client, queueUrl, receiptHandle, leaseMs } = options;
  const heldSinceMs = options.heldSinceMs ?? Date.now();
  const onError = options.onError ?? (() => {});
  const stopper = new AbortController();
  let inFlight: Promise<void> = Promise.resolve();
  const beat = () => {
    inFlight = changeMessageVisibility(client, queueUrl, receiptHandle, leaseMs, heldSinceMs).catch(onError);
  };
  beat();
  const first = inFlight;
  const timer = setInterval(() => {
    if (!stopper.signal.aborted) beat();
  }, Math.max(100, Math.floor(leaseMs / 3)));
  return {
    first,
    async stop() {
      stopper.abort();
      clearInterval(timer);
      await inFlight;
    },
  };
}
