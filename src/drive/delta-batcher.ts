import type { Clock } from "../ports/clock.ts";

/** The two delta record kinds. */
export type DeltaKind = "assistant_text_delta" | "assistant_thinking_delta";

/** When pending fragments become one record. */
export interface FlushPolicy {
  /** Flush once the pending UTF-8 bytes reach this (spec default 1024). */
  bytes: number;
  /** Flush once the first pending fragment is this old, checked when a fragment arrives (default 200). */
  intervalMs: number;
}

/** The spec's policy (§1.5.3), sized for a store where every write costs (DynamoDB). */
export const DEFAULT_FLUSH_POLICY: FlushPolicy = { bytes: 1024, intervalMs: 200 };

/** One batch of fragments of one kind: becomes one delta record. */
export interface DeltaBatch {
  kind: DeltaKind;
  text: string;
}

/** What most pushes return: one shared empty list, so the per-delta hot path allocates nothing. */
const NO_BATCHES: readonly DeltaBatch[] = Object.freeze([]);

/**
 * The delta flush policy of spec §1.5.3, as a pure buffer: the caller writes what it returns.
 *
 * One pending buffer per run. A fragment of a different kind flushes the pending batch first;
 * the buffer flushes when its bytes reach `policy.bytes` or when `now - firstAt >=
 * policy.intervalMs`, the age being evaluated only when a fragment arrives (no timer: a stale
 * tail waits for the next fragment or boundary). Before any non-delta record, and when the stream
 * ends, the caller takes the pending batch with {@link take}.
 *
 * One departure from the spec (ADR 0036): after {@link messageStarted}, the first fragment of
 * each kind flushes at once, so a reader sees the reply (or its reasoning) begin without waiting
 * out the interval: the time to first token is what a chat user feels. It costs at most one
 * write per kind per message.
 */
export class DeltaBatcher {
  readonly #policy: FlushPolicy;
  readonly #clock: Clock;
  #kind: DeltaKind | undefined;
  // Concatenation (V8 ropes) beats collecting parts and joining them on this hot path.
  #text = "";
  #bytes = 0;
  #firstAt = 0;
  // The current message's first fragment of each kind has yet to arrive (it flushes at once).
  #textFresh = false;
  #thinkingFresh = false;

  constructor(policy: FlushPolicy, clock: Clock) {
    this.#policy = policy;
    this.#clock = clock;
  }

  /** Adds a fragment; returns the batches to write now, oldest first (zero, one or two). */
  push(kind: DeltaKind, text: string): readonly DeltaBatch[] {
    if (text === "") return NO_BATCHES;
    let out: DeltaBatch[] | undefined;
    if (this.#kind !== undefined && this.#kind !== kind) {
      const prior = this.take();
      if (prior) out = [prior];
    }
    const now = this.#clock.now();
    if (this.#text === "") {
      this.#kind = kind;
      this.#firstAt = now;
    }
    this.#text += text;
    this.#bytes += utf8Length(text);
    let first = false;
    if (kind === "assistant_text_delta") {
      first = this.#textFresh;
      this.#textFresh = false;
    } else {
      first = this.#thinkingFresh;
      this.#thinkingFresh = false;
    }
    if (first || this.#bytes >= this.#policy.bytes || now - this.#firstAt >= this.#policy.intervalMs) {
      const batch = this.take();
      if (batch) (out ??= []).push(batch);
    }
    return out ?? NO_BATCHES;
  }

  /** An assistant message began: the first fragment of each kind in it flushes at once. */
  messageStarted(): void {
    this.#textFresh = true;
    this.#thinkingFresh = true;
  }

  /** The pending batch, if any, clearing the buffer (before a non-delta record, at stream end). */
  take(): DeltaBatch | undefined {
    if (this.#text === "" || this.#kind === undefined) return undefined;
    const batch: DeltaBatch = { kind: this.#kind, text: this.#text };
    this.#text = "";
    this.#bytes = 0;
    this.#kind = undefined;
    return batch;
  }

  /** True while fragments wait in the buffer. */
  get pending(): boolean {
    return this.#text !== "";
  }
}

/** UTF-8 length of `s` (a lone surrogate counts as the 3-byte replacement character). */
export function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      i++;
      n += 2; // a surrogate pair: two code units, four bytes
    } else n += 2;
  }
  return n;
}
