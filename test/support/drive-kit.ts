import { conversationCreatedDraft } from "../../src/conversation/conversation-created.ts";
import type { ConversationRecord } from "../../src/protocol/records.ts";
import { ManualClock } from "../../src/ports/clock.ts";
import type { HarnessEvent, Interceptor } from "../../src/ports/observer.ts";
import type { Store } from "../../src/store/store.ts";
import type { DispatchMessage, SessionKey, Submission } from "../../src/store/submission.ts";
import type { AgentSetup } from "../../src/agent/agent-setup.ts";
import { AttemptLogWriter } from "../../src/engine/log-writer.ts";
import { drive, type DriveContext, type DriveOutcome } from "../../src/drive/drive.ts";
import { createMemoryStore } from "../../src/memory/index.ts";

export const KEY: SessionKey = { agent: "assistant", instance: "i1", session: "default" };
export const LEASE_MS = 30_000;

/** One session with one admitted submission, over a memory store and a manual clock. */
export class Harness {
  readonly clock = new ManualClock();
  readonly store: Store = createMemoryStore({ clock: this.clock });
  readonly events: HarnessEvent[] = [];
  conversationId = "";
  submissionId = "";
  /** The current claim (the row as the claim returned it). */
  claimed: Submission | undefined;
  #attempt = 0;
  #createdId = "";

  async admit(input: DispatchMessage, id = "sub-1"): Promise<void> {
    const { conversation, created } = await this.store.ensureConversation({ id: "conv-1", key: KEY, createdAt: this.clock.now() });
    this.conversationId = conversation.id;
    if (created) {
      // As admission does: the log's first record (a drive writes it only when it is missing).
      const time = new Date(this.clock.now()).toISOString();
      [{ id: this.#createdId }] = await this.store.appendRecords(conversation.id, [conversationCreatedDraft(conversation.id, KEY, time)]);
    }
    await this.store.admitSubmission({ id, conversationId: conversation.id, sessionKey: KEY, input, createdAt: this.clock.now() });
    this.submissionId = id;
  }

  /** Claims the submission under a fresh attempt id `att-N`. */
  async claim(): Promise<Submission> {
    this.#attempt++;
    this.claimed = await this.store.claimSubmission({
      submissionId: this.submissionId,
      attemptId: `att-${this.#attempt}`,
      ownerId: "owner-1",
      leaseExpiresAt: this.clock.now() + LEASE_MS,
    });
    return this.claimed;
  }

  /** Gives the row back (a crash recovered by the sweeper, or a planned hand-off). */
  async release(options: { continuation?: boolean; lastError?: string } = {}): Promise<void> {
    await this.store.releaseSubmission({ submissionId: this.submissionId, attemptId: this.claimed!.attemptId!, ...options });
  }

  /** The log writer of the claim `sub` (as the engine creates one per attempt). */
  writer(sub: Submission = this.claimed!): AttemptLogWriter {
    return new AttemptLogWriter(this.store, this.clock, sub, sub.attemptId!);
  }

  drive(setup: AgentSetup, overrides: Partial<DriveContext> = {}): Promise<DriveOutcome> {
    const sub = this.claimed!;
    return drive({
      log: this.writer(sub),
      clock: this.clock,
      input: sub.input,
      resume: sub.pendingResume,
      setup,
      flushPolicy: { bytes: 1024, intervalMs: 200 },
      observe: (e) => this.events.push(e),
      interceptors: [],
      signal: new AbortController().signal,
      shouldYield: () => false,
      deadline: sub.createdAt + 3_600_000,
      ...overrides,
    });
  }

  /** What the drives wrote: the log after its first record (which `admit` wrote, as admission does). */
  records(): Promise<ConversationRecord[]> {
    return this.store.readRecords(this.conversationId, this.#createdId);
  }
}

/** `kind` plus the payload fields that say what happened, for compact sequence assertions. */
export function summary(r: ConversationRecord): string {
  switch (r.kind) {
    case "user_message":
      return `user_message${r.payload.origin ? `(${r.payload.origin})` : ""}: ${r.payload.body.split("\n")[0]}`;
    case "assistant_text_delta":
    case "assistant_thinking_delta":
      return `${r.kind}: ${r.payload.text}`;
    case "assistant_tool_call":
      return `assistant_tool_call: ${r.payload.callId} ${r.payload.toolName}`;
    case "tool_outcome":
      return `tool_outcome: ${r.payload.callId}${r.payload.isError ? " error" : ""} ${JSON.stringify(r.payload.content)}`;
    case "assistant_message_completed": {
      const body = r.payload.message.body as { stopReason: string };
      return `assistant_message_completed: ${body.stopReason}`;
    }
    default:
      return r.kind;
  }
}

/** A record without what differs between runs (ids, attempt, turn ids, times, durations). */
export function comparable(r: ConversationRecord): unknown {
  const { id: _id, attemptId: _a, turnId: _t, time: _time, ...rest } = r;
  if (r.kind === "assistant_message_completed") {
    const { durationMs: _d, ...body } = r.payload.message.body as Record<string, unknown>;
    return { ...rest, payload: { message: { ...r.payload.message, body } } };
  }
  return rest;
}

/** Waits until `cond` holds, letting the event loop run (bounded). */
export async function until(cond: () => boolean, rounds = 200): Promise<void> {
  for (let i = 0; i < rounds && !cond(); i++) await new Promise((r) => setImmediate(r));
  if (!cond()) throw new Error("condition not reached");
}

export type { Interceptor };
