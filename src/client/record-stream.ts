import type { ConversationRecord } from "../protocol/records.ts";
import { networkFailure, parseRecord, type Outcome } from "./answers.ts";
import { HarnessHttpError } from "./http-error.ts";
import { SseParser, type SseEvent } from "./sse-parser.ts";

/** Options of {@link HarnessClient.stream}. */
export interface StreamOptions {
  /** The session of the instance (default `"default"`). */
  session?: string;
  /** A record id: only records after it are sent. Default: the whole conversation. */
  after?: string;
  /** Aborting it ends the iteration, which then throws the signal's reason. */
  signal?: AbortSignal;
}

/** Options of {@link HarnessClient.waitForSettled}. */
export interface WaitOptions extends StreamOptions {
  /** Called with every record read on the way, the settled one included. */
  onRecord?: (record: ConversationRecord) => void;
}

/** Until the server sends its `retry:` hint. */
const DEFAULT_RETRY_MS = 1_000;
/** Failed reconnects in a row (network errors, 502/503/504) before the stream gives up. */
const MAX_RECONNECT_FAILURES = 5;
/** First and longest pause of {@link HarnessClient.waitForSettled} while the session is idle. */
const IDLE_POLL_MS = 250;
const MAX_IDLE_POLL_MS = 5_000;
const TRANSIENT_STATUS = new Set([502, 503, 504]);

type Send = (method: "GET", url: string, init: { headers?: Record<string, string>; signal?: AbortSignal; refreshToken?: boolean }) => Promise<Response>;

/** The client's session-following methods (reconnects, resume points, idle backoff) over its `send` and URLs. */
export interface RecordStream {
  stream(agent: string, instance: string, opts?: StreamOptions): AsyncGenerator<ConversationRecord>;
  waitForSettled(agent: string, instance: string, submissionId: string, opts?: WaitOptions): Promise<Outcome>;
}

/** {@link RecordStream} over the client's `send` (headers, signing) and its URLs. */
export function recordStream(send: Send, agentUrl: (agent: string, instance: string, suffix?: string) => string): RecordStream {
  async function* stream(agent: string, instance: string, opts: StreamOptions = {}): AsyncGenerator<ConversationRecord> {
    const { signal } = opts;
    const query = new URLSearchParams();
    if (opts.session !== undefined) query.set("session", opts.session);
    let cursor = opts.after ?? "";
    let retryMs = DEFAULT_RETRY_MS;
    let connectedOnce = false;
    let failures = 0;
    // A reconnect refused with 401 (the token expired during the stream) asks the client's token
    // once more, marked `refresh`, before failing; a connection that works allows it again later.
    let refreshToken = false;
    for (;;) {
      let failure: unknown;
      let delivered = 0;
      let res: Response | undefined;
      try {
        // The resume point rides in the query (the server reads it like the Last-Event-ID header):
        // a browser then needs no CORS preflight for it.
        if (cursor !== "") query.set("lastEventId", cursor);
        const qs = query.toString();
        const url = agentUrl(agent, instance, qs === "" ? "" : `?${qs}`);
        res = await send("GET", url, { headers: { accept: "text/event-stream" }, signal, refreshToken });
      } catch (err) {
        failure = err;
      }
      if (res?.status === 204) return;
      if (res !== undefined && !res.ok) {
        const error = await HarnessHttpError.fromResponse(res);
        if (connectedOnce && res.status === 401 && !refreshToken) {
          refreshToken = true;
          continue;
        }
        if (!connectedOnce || !TRANSIENT_STATUS.has(res.status)) throw error;
        failure = error;
      } else if (res !== undefined) {
        if (!(res.headers.get("content-type") ?? "").startsWith("text/event-stream") || res.body === null) {
          await res.body?.cancel();
          throw new HarnessHttpError(res.status, "unexpected_response", `expected text/event-stream, got ${res.headers.get("content-type")}`);
        }
        connectedOnce = true;
        refreshToken = false;
        const events: SseEvent[] = [];
        const parser = new SseParser({ event: (e) => events.push(e), retry: (ms) => (retryMs = ms) }, cursor);
        const reader = res.body.getReader();
        const decoder = new TextDecoder();
        try {
          for (;;) {
            let chunk: Awaited<ReturnType<typeof reader.read>>;
            try {
              chunk = await reader.read();
            } catch (err) {
              failure = networkFailure(err, agentUrl(agent, instance), signal);
              break;
            }
            if (chunk.done) break;
            parser.feed(decoder.decode(chunk.value, { stream: true }));
            for (const event of events.splice(0)) {
              const record = parseRecord(event);
              // Ids grow along the log: never hand out a record at or before the resume point twice.
              if (cursor !== "" && record.id <= cursor) continue;
              cursor = record.id;
              delivered++;
              failures = 0;
              signal?.throwIfAborted();
              yield record;
            }
          }
        } finally {
          await reader.cancel().catch(() => {});
        }
      }
      if (signal?.aborted) throw signal.reason;
      if (failure !== undefined) {
        if (!connectedOnce || ++failures > MAX_RECONNECT_FAILURES) throw failure;
        await sleep(retryMs, signal);
        continue;
      }
      // The server ended the stream: its time limit while the session is busy, or an idle session
      // caught up. The reconnect tells them apart (204 when idle). An empty connection waits first,
      // so a server that keeps ending streams early is not hammered.
      if (delivered === 0) await sleep(retryMs, signal);
    }
  }

  // `Outcome`: the wire's result, whatever type a typed client's caller expects of it.
  async function waitForSettled(agent: string, instance: string, submissionId: string, opts: WaitOptions = {}): Promise<Outcome> {
    let after = opts.after ?? "";
    let pause = IDLE_POLL_MS;
    for (;;) {
      let seen = false;
      for await (const record of stream(agent, instance, { session: opts.session, after, signal: opts.signal })) {
        after = record.id;
        seen = true;
        opts.onRecord?.(record);
        if (record.kind === "submission_settled" && record.submissionId === submissionId) {
          return { submissionId, conversationId: record.conversationId, ...record.payload };
        }
      }
      // Idle or parked on subagents before this submission settled: look again later.
      pause = seen ? IDLE_POLL_MS : Math.min(MAX_IDLE_POLL_MS, pause * 2);
      await sleep(pause, opts.signal);
    }
  }

  return { stream, waitForSettled };
}

/** Resolves after `ms`; rejects with the signal's reason if it aborts first. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
