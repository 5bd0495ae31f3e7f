/**
 * Shared plumbing of the store conformance suite: one fresh store and clock per case, fixtures
 * that seed state through the public Store API only, and assertions with clear messages.
 */
import { expect, it } from "vitest";
import { newId } from "../../conversation/ids.ts";
import type { ConversationRecord, RecordDraft } from "../../protocol/records.ts";
import type { HarnessErrorCode } from "../../errors.ts";
import { ManualClock } from "../../ports/clock.ts";
import type { Store } from "../store.ts";
import type { Cancellation, DispatchMessage, SessionKey, Submission } from "../submission.ts";

/** Builds a fresh, empty store whose time is `clock`. */
export type StoreFactory = (clock: ManualClock) => Promise<Store>;

/** Options of {@link describeStoreConformance}. */
export interface StoreConformanceOptions {
  /** Size in UTF-8 bytes of the payload text of the large-record round trip (default 1 MiB). */
  largePayloadBytes?: number;
  /** Disposes of a store after each case (default: `store.close()` when present). */
  teardown?: (store: Store) => Promise<void>;
}

/** What each case gets: its own store and the clock that store reads. */
export interface CaseContext {
  store: Store;
  clock: ManualClock;
  /** Fixtures bound to this case's store and clock. */
  fx: Fixtures;
  options: Required<Pick<StoreConformanceOptions, "largePayloadBytes">>;
}

export type CaseBody = (ctx: CaseContext) => Promise<void>;

/** Registers cases sharing one factory; each case builds and tears down its own store. */
export function caseRegistrar(factory: StoreFactory, options: StoreConformanceOptions = {}) {
  const largePayloadBytes = options.largePayloadBytes ?? 1024 * 1024;
  return (name: string, body: CaseBody): void => {
    it(name, async () => {
      const clock = new ManualClock();
      const store = await factory(clock);
      try {
        await body({ store, clock, fx: new Fixtures(store, clock), options: { largePayloadBytes } });
      } finally {
        if (options.teardown) await options.teardown(store);
        else await store.close?.();
      }
    });
  };
}

/** Lease length the fixtures claim with. */
export const LEASE_MS = 30_000;

let keyCounter = 0;

/** Seeds state through the public API, the way the engine would. */
export class Fixtures {
  readonly store: Store;
  readonly clock: ManualClock;

  constructor(store: Store, clock: ManualClock) {
    this.store = store;
    this.clock = clock;
  }

  /** A session key unique within the process run (stores may be shared by a factory). */
  key(session = "default", agent = "agent"): SessionKey {
    keyCounter += 1;
    return { agent, instance: `inst-${keyCounter}-${newId(this.clock.now())}`, session };
  }

  /** A fresh id; ticks the clock so ids and admission times order like admission. */
  id(): string {
    this.clock.set(this.clock.now() + 1);
    return newId(this.clock.now());
  }

  /** Ensures the session's conversation and returns its id. */
  async conversation(key: SessionKey): Promise<string> {
    const { conversation } = await this.store.ensureConversation({
      id: newId(this.clock.now()),
      key,
      createdAt: this.clock.now(),
    });
    return conversation.id;
  }

  /** Admits a queued submission (its conversation ensured first, as admission does). */
  async admit(
    key: SessionKey,
    extra: {
      id?: string;
      input?: DispatchMessage;
      parentSubmissionId?: string;
      parentCallId?: string;
      depth?: number;
      /** A delayed message's time (ADR 0025). */
      delayedUntil?: number;
    } = {},
  ): Promise<Submission> {
    const conversationId = await this.conversation(key);
    const id = extra.id ?? this.id();
    const { submission } = await this.store.admitSubmission({
      id,
      conversationId,
      sessionKey: key,
      input: extra.input ?? { kind: "user", body: `hello from ${id}` },
      createdAt: this.clock.now(),
      parentSubmissionId: extra.parentSubmissionId,
      parentCallId: extra.parentCallId,
      depth: extra.depth,
      ...(extra.delayedUntil !== undefined ? { delayedUntil: extra.delayedUntil } : {}),
    });
    return submission;
  }

  /** Claims `sub` with a fresh attempt; returns the claimed row. */
  async claim(sub: { id: string }, leaseMs = LEASE_MS): Promise<Submission> {
    return this.store.claimSubmission({
      submissionId: sub.id,
      attemptId: newId(this.clock.now()),
      ownerId: "owner-1",
      leaseExpiresAt: this.clock.now() + leaseMs,
    });
  }

  /** Admits and claims a submission in a fresh session. */
  async running(key = this.key()): Promise<Submission> {
    return this.claim(await this.admit(key));
  }

  /** A running submission parked in `waiting`. */
  async waiting(waitUntil?: number, key = this.key()): Promise<Submission> {
    const sub = await this.running(key);
    await this.store.waitSubmission({ submissionId: sub.id, attemptId: sub.attemptId!, waitUntil });
    return this.store.getSubmission(sub.id);
  }

  /** A settled submission (through both settlement phases). */
  async settled(key = this.key()): Promise<Submission> {
    const sub = await this.running(key);
    await this.store.reserveSettlement(sub.id, sub.attemptId!);
    await this.store.finalizeSettlement(sub.id);
    return this.store.getSubmission(sub.id);
  }

  /**
   * Cancels a queued or waiting `sub` and finishes its settlement (the canceller's finalize;
   * the engine also appends the settlement record in between).
   */
  async cancelled(sub: { id: string }, reason = "bye"): Promise<Submission> {
    await this.store.cancelSubmission(sub.id, cancellation(reason));
    await this.store.finalizeSettlement(sub.id);
    return this.store.getSubmission(sub.id);
  }

  /** A record draft for `conversationId` (a text delta unless told otherwise). */
  draft(conversationId: string, text: string, extra: Partial<RecordDraft> = {}): RecordDraft {
    return {
      kind: "assistant_text_delta",
      conversationId,
      session: "default",
      time: new Date(this.clock.now()).toISOString(),
      payload: { text },
      ...extra,
    } as RecordDraft;
  }

  /** The whole log. */
  async log(conversationId: string): Promise<ConversationRecord[]> {
    return this.store.readRecords(conversationId, "");
  }

  /** The id of the last record ("" for an empty log). */
  async head(conversationId: string): Promise<string> {
    const all = await this.log(conversationId);
    return all.length === 0 ? "" : all[all.length - 1]!.id;
  }
}

/** A cancellation by request with `reason`. */
export function cancellation(reason: string): Cancellation {
  return { errorCode: "cancelled", error: `cancelled: ${reason}` };
}

/**
 * Awaits `promise` and asserts it rejects with a harness error of `code`. Checks the `code`
 * property rather than the class so adapters built against another copy of the package pass.
 */
export async function expectCode(
  promise: Promise<unknown>,
  code: HarnessErrorCode,
  what: string,
): Promise<void> {
  let outcome: { ok: true; value: unknown } | { ok: false; error: unknown };
  try {
    outcome = { ok: true, value: await promise };
  } catch (error) {
    outcome = { ok: false, error };
  }
  if (outcome.ok) {
    expect.fail(`${what}: expected rejection with code "${code}", but it resolved with ${show(outcome.value)}`);
  }
  const got = (outcome.error as { code?: unknown } | null)?.code;
  if (got !== code) {
    expect.fail(`${what}: expected rejection with code "${code}", got ${show(outcome.error)}`);
  }
}

function show(value: unknown): string {
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return `${value.name}${code === undefined ? "" : ` (code "${String(code)}")`}: ${value.message}`;
  }
  try {
    const text = JSON.stringify(value);
    return text === undefined ? String(value) : text.length > 300 ? `${text.slice(0, 300)}…` : text;
  } catch {
    return String(value);
  }
}

/** Ids of `subs`, sorted (for comparisons where the contract fixes no order). */
export function sortedIds(subs: readonly { id: string }[]): string[] {
  return subs.map((s) => s.id).sort();
}

/** Ids of `subs` in the order given. */
export function ids(subs: readonly { id: string }[]): string[] {
  return subs.map((s) => s.id);
}

/**
 * Runs `mutate` and swallows the TypeError a frozen object throws: a store may hand out frozen
 * values or fresh copies, and either way the stored state must not change.
 */
export function tryMutate(mutate: () => void): void {
  try {
    mutate();
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
  }
}

/** Asserts that record ids strictly increase along `records`. */
export function expectStrictlyIncreasing(records: readonly { id: string }[], what: string): void {
  for (let i = 1; i < records.length; i++) {
    const prev = records[i - 1]!.id;
    const cur = records[i]!.id;
    if (!(cur > prev)) expect.fail(`${what}: record id #${i} (${cur}) is not greater than #${i - 1} (${prev})`);
  }
}
