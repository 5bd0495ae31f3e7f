import type { SSEStreamingApi } from "hono/streaming";
import { isStreamingDeltaKind, type ConversationRecord } from "../protocol/records.ts";
import type { Runtime } from "../runtime/runtime.ts";

/** What a stream reads through: the runtime, or its face for one caller (`Runtime.as`). */
export type RecordSource = Pick<Runtime, "records" | "sessionLive" | "onAppend">;
import type { SessionKey } from "../protocol/dispatch.ts";

/** Timing of one record stream (see `AppOptions` for the meaning and defaults). */
export interface StreamTiming {
  maxStreamMs: number;
  keepAliveMs: number;
  pollMs: number;
  maxPollMs: number;
  retryMs: number;
}

/** Records read per store query while replaying. */
export const STREAM_PAGE = 256;

/** The first page after `afterId` and whether the session is live, read in the order the tail needs. */
export async function firstPage(
  runtime: RecordSource,
  key: SessionKey,
  conversationId: string,
  afterId: string,
): Promise<{ records: ConversationRecord[]; live: boolean }> {
  // A page with records needs no liveness: the tail reads on after it anyway. Only an empty read
  // asks, and then in the order that makes "caught up" true: liveness first (if the session was
  // idle then, every record it will have until the next dispatch is already in the log), then the
  // read again, so an append between the two reads is not missed. Saves a store read per wake.
  const records = await runtime.records(conversationId, afterId, STREAM_PAGE);
  if (records.length > 0) return { records, live: true };
  const live = await runtime.sessionLive(key);
  return { records: await runtime.records(conversationId, afterId, STREAM_PAGE), live };
}

/** Where a stream starts: the session, its conversation, the offset and the page read at it. */
export interface TailStart {
  key: SessionKey;
  conversationId: string;
  /** The client's Last-Event-ID ("" for the whole log). */
  afterId: string;
  first: { records: ConversationRecord[]; live: boolean };
}

/** Growth of the poll interval per poll that finds nothing (from `pollMs` up to `maxPollMs`). */
export const POLL_BACKOFF = 1.25;

/**
 * How long after records other than deltas arrived the poll stays at `pollMs` before it backs
 * off (`holdsAfter`): a run that just wrote a user message, a tool's outcome or a message's start
 * is about to stream its model's first token, and what the viewer waits for is the poll after it.
 */
export const POLL_HOLD_MS = 1_000;

/**
 * Whether a page ending with `lastKind` holds the poll at `pollMs` for {@link POLL_HOLD_MS}. Not
 * after a delta: the next one comes a flush interval later (200 ms and a fragment), which the
 * backoff's 100 + 125 ms meets, so a streaming tail finds each flush soon after its write.
 */
export function holdsAfter(lastKind: string): boolean {
  return !isStreamingDeltaKind(lastKind);
}

/**
 * How long a stream goes without asking whether its session is still live when no record told
 * it to: a safety net (a settlement or a spawn is what normally ends a session's liveness).
 */
export const LIVENESS_CHECK_MS = 30_000;

/**
 * The interval before the next poll after one that found nothing, `sinceRecordsMs` after records
 * that hold the poll last arrived: half of `pollMs` while that is under {@link POLL_HOLD_MS} (the
 * first token's wait sets the phase of every later delta's, see ADR 0031), then
 * {@link POLL_BACKOFF} times the last interval, up to `maxPollMs`.
 */
export function nextPollMs(lastMs: number, timing: Pick<StreamTiming, "pollMs" | "maxPollMs">, sinceRecordsMs: number): number {
  if (sinceRecordsMs < POLL_HOLD_MS) return Math.ceil(timing.pollMs / 2);
  return Math.min(timing.maxPollMs, Math.ceil(lastMs * POLL_BACKOFF));
}

/**
 * The wait before the poll after a page whose last record is `lastKind`: a quarter of `pollMs`
 * after `assistant_message_started`, half after another record that holds the poll
 * ({@link holdsAfter}), `pollMs` after a delta. A message's first delta is written at once
 * (ADR 0036), one write after its start: the poll that found the start alone comes back for the
 * first token soon instead of a whole interval later (one read more per model call).
 */
export function pollAfterRecords(lastKind: string, timing: Pick<StreamTiming, "pollMs">): number {
  if (lastKind === "assistant_message_started") return Math.ceil(timing.pollMs / 4);
  return holdsAfter(lastKind) ? Math.ceil(timing.pollMs / 2) : timing.pollMs;
}

/**
 * Records after which the session's run certainly goes on. After any other record (a settlement,
 * a spawn, an approval request or a callback's start, which a park may follow, an approval's
 * decision, or a kind this version does not know) the head may have settled or parked, so the
 * stream asks whether the session is still live.
 */
const RUN_GOES_ON = new Set<string>([
  "conversation_created",
  "user_message",
  "signal",
  "assistant_message_started",
  "assistant_text_delta",
  "assistant_thinking_delta",
  "assistant_tool_call",
  "tool_started",
  "tool_outcome",
  "assistant_message_completed",
  "compaction",
  // Queued for its next try (ADR 0053): the run goes on at that time.
  "submission_retrying",
]);

/**
 * Writes the conversation's records as SSE frames (`id` = record id, `event` = kind, `data` =
 * the record's JSON) starting with `first`, then tails the log: woken by the runtime's in-process
 * append notification, or by a poll for appends made by other processes (the worker functions,
 * on Lambda). Sends keep-alive comments when quiet, and ends when the session is idle and
 * caught up, when the client goes away, when `shutdown` aborts, or after `maxStreamMs` (a client
 * reconnects with Last-Event-ID and misses nothing).
 *
 * The poll is what a serverless stream costs while it waits, so it does as little as it can:
 * - it reads the log only (one store query: on DynamoDB one strongly consistent Query, one read
 *   unit while caught up); whether the session is still live is asked only when it may have
 *   changed — after a record that may end a run was sent (a settlement, a spawn), when liveness
 *   was assumed rather than read (a replay), and every {@link LIVENESS_CHECK_MS} as a safety
 *   net — and then in the order that makes "caught up" true (`firstPage`);
 * - it polls every half `pollMs` for {@link POLL_HOLD_MS} after records other than deltas
 *   arrived (the model's first token is coming), then backs off by {@link POLL_BACKOFF} per poll that
 *   finds nothing, up to `maxPollMs`; records arriving start it again at `pollMs`;
 * - after a settlement it looks again at once, so a stream whose session went idle ends
 *   without waiting a poll interval (on Lambda, an open stream is billed time).
 */
export async function tailRecords(
  stream: SSEStreamingApi,
  runtime: RecordSource,
  from: TailStart,
  timing: StreamTiming,
  shutdown: AbortSignal | undefined,
): Promise<void> {
  const { key, conversationId, first } = from;
  const startedAt = Date.now();
  const deadline = startedAt + timing.maxStreamMs;
  let lastWriteAt = startedAt;
  let lastKind = "";
  // When records last arrived (the stream's start counts: the run it follows is likely to write).
  let recordsAt = startedAt;
  let afterId = from.afterId;
  let wake: (() => void) | undefined;
  let woken = false;
  // `first` read liveness only when it found no records; otherwise liveness is assumed.
  let livenessDue = first.records.length > 0;
  let livenessReadAt = startedAt;
  const poke = () => {
    woken = true;
    wake?.();
  };
  const unsubscribe = runtime.onAppend(conversationId, poke);
  stream.onAbort(poke);
  shutdown?.addEventListener("abort", poke, { once: true });
  const stopped = () => stream.aborted || stream.closed || shutdown?.aborted === true;

  // A page goes out as one chunk (one socket write, not one per record). The frame is what
  // `writeSSE` would make: a record's JSON has no line break, its id and kind none either.
  const write = async (records: ConversationRecord[]) => {
    if (records.length === 0) return;
    let frames = "";
    for (const record of records) {
      frames += `event: ${record.kind}\ndata: ${JSON.stringify(record)}\nid: ${record.id}\n\n`;
      if (!RUN_GOES_ON.has(record.kind)) livenessDue = true;
    }
    await stream.write(frames);
    afterId = records[records.length - 1]!.id;
    lastKind = records[records.length - 1]!.kind;
    lastWriteAt = Date.now();
  };

  try {
    // A first byte at once: on Lambda the status and headers leave only with it.
    await stream.write(`: connected\nretry: ${timing.retryMs}\n\n`);
    let page = first;
    let pollMs = timing.pollMs;
    for (;;) {
      await write(page.records);
      if (stopped()) return;
      if (page.records.length === STREAM_PAGE) {
        if (Date.now() >= deadline) return; // a long replay resumes on the next connection
        page = await nextPage();
        continue;
      }
      if (page.records.length === 0 && !page.live) return;
      if (page.records.length > 0) {
        pollMs = timing.pollMs;
        recordsAt = holdsAfter(lastKind) ? Date.now() : Number.NEGATIVE_INFINITY;
        // The session may just have gone idle: ask now rather than a poll interval later.
        if (livenessDue) {
          page = await nextPage();
          continue;
        }
      } else pollMs = nextPollMs(pollMs, timing, Date.now() - recordsAt);

      // Sleep until an append, the poll, a keep-alive or the deadline, whichever is first.
      const now = Date.now();
      if (now >= deadline) return;
      const keepAliveAt = lastWriteAt + timing.keepAliveMs;
      // Right after records, the wait depends on what came last (the first token follows a start).
      const wait = page.records.length > 0 ? pollAfterRecords(lastKind, timing) : pollMs;
      const delay = Math.max(0, Math.min(wait, keepAliveAt - now, deadline - now));
      if (!woken) await sleep(delay, (resolve) => (wake = resolve));
      wake = undefined;
      if (woken) pollMs = timing.pollMs;
      woken = false;
      if (stopped() || Date.now() >= deadline) return;
      if (Date.now() >= lastWriteAt + timing.keepAliveMs) {
        await stream.write(": keep-alive\n\n");
        lastWriteAt = Date.now();
      }
      page = await nextPage();
    }
  } finally {
    unsubscribe();
    shutdown?.removeEventListener("abort", poke);
  }

  /** The records after `afterId`; liveness too when it is due (see above), else assumed. */
  async function nextPage(): Promise<{ records: ConversationRecord[]; live: boolean }> {
    if (livenessDue || Date.now() - livenessReadAt >= LIVENESS_CHECK_MS) {
      const page = await firstPage(runtime, key, conversationId, afterId);
      // A page with records was read without asking (more to send first): still due.
      if (page.records.length === 0) {
        livenessDue = false;
        livenessReadAt = Date.now();
      }
      return page;
    }
    return { records: await runtime.records(conversationId, afterId, STREAM_PAGE), live: true };
  }
}

/** Resolves after `ms`, or earlier when the wake function handed to `onWakeable` is called. */
function sleep(ms: number, onWakeable: (wake: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      resolve();
    }
    onWakeable(done);
  });
}
