import type { AgentEvent } from "@earendil-works/pi-agent-core";
import type { AssistantMessage } from "@earendil-works/pi-ai";
import { newId } from "../conversation/ids.ts";
import type { ConversationRecord, RecordBody } from "../protocol/records.ts";
import type { Clock } from "../ports/clock.ts";
import type { FaultPhase } from "../ports/faults.ts";
import type { LogWriter } from "../ports/log-writer.ts";
import type { Correlation, HarnessEvent } from "../ports/observer.ts";
import { agentEventEffects, type EventEffects, type TurnView } from "./agent-events.ts";
import { DeltaBatcher, type DeltaBatch, type FlushPolicy } from "./delta-batcher.ts";
import type { DriveOutcome } from "./drive-outcome.ts";

/** What a drive lends its recorder. */
export interface TurnRecorderHost {
  readonly log: LogWriter;
  readonly clock: Clock;
  readonly flushPolicy: FlushPolicy;
  readonly observe: (e: HarnessEvent) => void;
  readonly modelId: string;
  /** The fault seam, bound to the submission (tests only). */
  readonly faults?: ((phase: FaultPhase) => void | Promise<void>) | undefined;
  /** The attempt's local log: every append is pushed onto it. */
  readonly records: ConversationRecord[];
  /** The drive's first stop reason, if it has one. */
  halted(): DriveOutcome | undefined;
  /** A failed write: becomes the drive's halt and stops the run. */
  onStoreError(err: unknown): void;
  /** Adjusts an event's effects before they are recorded (a spawned `task` call: `task-suspension.ts`). */
  readonly rewrite?: ((event: AgentEvent, effects: EventEffects) => void) | undefined;
}

/**
 * Records one attempt's pi agent events in the log: the turn's id and correlation, delta
 * batching, and the write barrier (pi awaits its listeners in order, so the promise `onEvent`
 * returns is what makes a record durable before the agent goes on). The mapping itself is
 * `agentEventEffects`.
 *
 * Deltas have no barrier (ADR 0022): a flushed delta batch is written at once when none of this
 * recorder's writes is in flight, and otherwise waits for the next one, so deltas that arrive
 * while a write is in flight share one append (one transaction) instead of one each. Every other
 * record is a barrier and takes the waiting deltas with it, so the log keeps its order.
 */
export class TurnRecorder {
  readonly #host: TurnRecorderHost;
  readonly #batcher: DeltaBatcher;
  /** The current turn as the mapping sees it; one object, updated in place (per delta, no allocation). */
  readonly #view: TurnView;
  #turnId: string | undefined;
  /** Flushed delta batches waiting for the write in flight to end (or for the next record). */
  #ready: DeltaBatch[] = [];
  /** This recorder's writes started and not yet ended. */
  #inFlight = 0;
  /** The last write's end (its failure handed on): the next write starts after it. */
  #writes: Promise<void> = Promise.resolve();
  /** The `mid_stream` fault point was passed (once per attempt). */
  #midStreamPassed = false;
  /** The last assistant message that ended (the operation is classified by it); the drive resets it. */
  lastAssistant: AssistantMessage | undefined;

  /** `turns`: the turns the run had before this attempt (the rebuild's count). */
  constructor(host: TurnRecorderHost, turns: number) {
    this.#host = host;
    this.#batcher = new DeltaBatcher(host.flushPolicy, host.clock);
    this.#view = { correlation: host.log.correlation, turn: turns, modelId: host.modelId };
  }

  /** Correlation ids of an event; `withTurn` adds the current turn's id (inside a turn). */
  correlation(withTurn = true): Correlation {
    return withTurn ? this.#view.correlation : this.#host.log.correlation;
  }

  /** Reports and records an agent event; a returned promise is the durability barrier. */
  onEvent(event: AgentEvent): Promise<void> | undefined {
    const host = this.#host;
    if (event.type === "turn_start") {
      this.#turnId = newId(host.clock.now());
      this.#view.correlation = { ...host.log.correlation, turnId: this.#turnId };
      this.#view.turn++;
    }
    // The reply's first fragment of each kind is written at once (ADR 0036: time to first token).
    if (event.type === "message_start" && event.message.role === "assistant") this.#batcher.messageStarted();
    const effects = agentEventEffects(event, this.#view);
    host.rewrite?.(event, effects);
    for (const e of effects.observe) host.observe(e);
    if (effects.assistantEnded) this.lastAssistant = effects.assistantEnded;
    let written: Promise<void> | undefined;
    if (effects.delta) {
      const batches = this.#batcher.push(effects.delta.kind, effects.delta.text);
      for (const batch of batches) this.#ready.push(batch);
      // Written now only when nothing is in flight; not awaited (no barrier) except by the
      // test-only mid-stream fault point, which must act once the first delta write is durable.
      const started = batches.length > 0 && this.#inFlight === 0 ? this.#write([], false) : undefined;
      if (started && host.faults && !this.#midStreamPassed) {
        this.#midStreamPassed = true;
        const faults = host.faults;
        written = started.then(() => faults("mid_stream"));
      }
    }
    if (effects.records) written = this.#write(effects.records);
    const after = effects.observeAfter;
    if (after === undefined) return written;
    return (written ?? Promise.resolve()).then(() => {
      for (const e of after) host.observe(e);
    });
  }

  /**
   * Appends `records` in log order with this recorder's other writes (after the waiting deltas)
   * and resolves once they are durable: the stored records, or undefined when they were not
   * written (the run stopped, or the write failed and became its halt). For a record that must be
   * durable before the run goes on (a deferred call's `callback_started` before its `start`).
   */
  async recordNow(records: readonly RecordBody[]): Promise<ConversationRecord[] | undefined> {
    let written: ConversationRecord[] | undefined;
    await this.#write(records, true, (appended) => (written = appended.slice(appended.length - records.length)));
    return written;
  }

  /** Appends `records` through the log writer, stamped with the current turn when `inTurn`; the local log follows. */
  async append(records: readonly RecordBody[], inTurn = true): Promise<ConversationRecord[]> {
    const { log, records: local } = this.#host;
    const turnId = inTurn ? this.#turnId : undefined;
    const appended = await log.append(records.map((r) => log.draft(r.kind, r.payload, turnId)));
    local.push(...appended);
    return appended;
  }

  /**
   * Appends the waiting delta batches, then (unless `flush` is false: a write of deltas alone)
   * the pending fragments, then `records`, as one batch; failures become halts. When it ends and
   * deltas are waiting with nothing else in flight, they go in the next write.
   */
  #write(records: readonly RecordBody[], flush = true, onWritten?: (appended: ConversationRecord[]) => void): Promise<void> | undefined {
    // After an interruption, a store failure or a planned stop nothing more is recorded; after a
    // run failure the in-flight turn is still recorded truthfully.
    const halt = this.#host.halted();
    if (halt !== undefined && halt.kind !== "failed") return undefined;
    const batch = this.#ready.map(deltaRecord);
    this.#ready = [];
    if (flush) {
      const pending = this.#batcher.take();
      if (pending) batch.push(deltaRecord(pending));
    }
    for (const r of records) batch.push(r);
    if (batch.length === 0) return undefined;
    this.#inFlight++;
    // One write at a time, each started only once the one before it has ended and its failure
    // (if any) has become a halt: a write queued behind a failed one is then not made at all.
    const done = this.#writes
      .then(() => {
        const stopped = this.#host.halted();
        if (stopped !== undefined && stopped.kind !== "failed") return undefined;
        return this.append(batch).then((appended) => onWritten?.(appended));
      })
      .then(
        () => this.#ended(),
        (err: unknown) => {
          this.#host.onStoreError(err);
          this.#ended();
        },
      );
    this.#writes = done;
    return done;
  }

  /** A write ended: deltas that waited for it are written now, unless another write is in flight. */
  #ended(): void {
    if (--this.#inFlight === 0 && this.#ready.length > 0) void this.#write([], false);
  }
}

function deltaRecord(batch: DeltaBatch): RecordBody {
  return { kind: batch.kind, payload: { text: batch.text } };
}
