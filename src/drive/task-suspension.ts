import type { AgentEvent, AgentTool } from "@earendil-works/pi-agent-core";
import type { AssistantToolCallPayload, ConversationRecord, RecordBody } from "../protocol/records.ts";
import type { Correlation, HarnessEvent } from "../ports/observer.ts";
import type { EventEffects } from "./agent-events.ts";
import type { Rebuilt } from "./rebuild.ts";
import { errorText, isHarnessError } from "../errors.ts";
import { checkArguments, runCall, spawnedOf, TASK_TOOL_NAME, taskTool, type CallOutcome, type TaskSpawner } from "./task-tool.ts";

/**
 * Suspension without a pi primitive (pi 1.6 has no tool-level suspend; ADR 0017): a drive's
 * bookkeeping of its `task` calls. A call that admitted its child is recorded as `task_spawned`
 * (no `tool_outcome`), and the turn that made one ends the run after its tool batch: the drive
 * returns `waiting` with the calls, the engine parks the submission, and the children's
 * settlements deliver the outcomes. A later drive that finds such a call still unanswered (a crash
 * before the park) parks again instead of answering it as interrupted.
 */
export class TaskSuspension {
  readonly #spawner: TaskSpawner;
  readonly #correlation: Correlation & { submissionId: string };
  readonly #observe: (e: HarnessEvent) => void;
  /** The drive's log as it knows it. */
  readonly #records: () => readonly ConversationRecord[];
  /** Calls that spawned in the current turn. */
  #turn: string[] = [];

  constructor(
    spawner: TaskSpawner,
    correlation: Correlation & { submissionId: string },
    records: () => readonly ConversationRecord[],
    observe: (e: HarnessEvent) => void,
  ) {
    this.#spawner = spawner;
    this.#correlation = correlation;
    this.#records = records;
    this.#observe = observe;
  }

  /** The `task` tool of this drive; a store error in a call goes to `onStoreError` (the drive stops). */
  tool(onStoreError: (err: unknown) => void): AgentTool<any> {
    return taskTool(this.#spawner, () => this.#live(), onStoreError);
  }

  /**
   * At the start of a drive, this submission's unanswered `task` calls (a crash or a store error
   * stopped its last attempt in their tool batch) are executed again, which is safe because a call's child is
   * named after the call: a call whose child exists stays pending, with its `task_spawned` record
   * repaired when the log lacks it; a call without a child admits it now (the batch's fan-out
   * bound applies) and stays pending too. (A call is recorded in one batch with its completed,
   * non-failed assistant message, so the agent did go on to execute it.) Pending calls are taken out of `start`'s dangling calls
   * and missing outcomes; a call refused now (bad arguments, the child limit) is answered with
   * its refusal. Returns the pending calls (the drive parks again when there are any). Store
   * errors are thrown (`StoreFailure`: the attempt is retried).
   */
  async keepPending(start: Rebuilt): Promise<string[]> {
    const pending: string[] = [];
    const repairs: RecordBody[] = [];
    const spawned: RecordBody[] = [];
    const refusals = new Map<string, string>();
    const names = this.#spawner.targets.map((t) => t.name);
    // Only this submission's calls: an earlier submission's unanswered call (it was cancelled or
    // failed while it waited) is answered interrupted like any dangling call, never run again
    // under this submission's name.
    const own = new Set<string>();
    for (const r of start.path) {
      if (r.kind === "assistant_tool_call" && r.submissionId === this.#correlation.submissionId) own.add(r.payload.callId);
    }
    for (const call of start.dangling) {
      if (call.toolName !== TASK_TOOL_NAME || !own.has(call.callId)) continue;
      const found = await this.#spawner.existing(call.callId);
      if (found !== undefined) {
        pending.push(call.callId);
        if (!this.#hasSpawnRecord(call.callId)) repairs.push({ kind: "task_spawned", payload: found });
        continue;
      }
      const outcome = await this.#reexecute(call, names, new Set(pending));
      if (outcome.refusal !== undefined) {
        refusals.set(call.callId, outcome.refusal);
        continue;
      }
      pending.push(call.callId);
      spawned.push({ kind: "task_spawned", payload: outcome.spawned });
    }
    if (pending.length === 0 && refusals.size === 0) return pending;
    if (repairs.length > 0) {
      this.#observe({
        type: "recovery",
        correlation: this.#correlation,
        decision: "spawn_record_reconciled",
        detail: `repaired ${repairs.length} task_spawned record(s) from the children's rows: ${repairs.map((r) => (r.payload as { callId: string }).callId).join(", ")}`,
      });
    }
    const kept = new Set(pending);
    start.dangling = start.dangling.filter((d) => !kept.has(d.callId) && !refusals.has(d.callId));
    const missing = start.missing
      .filter((m) => !(m.kind === "tool_outcome" && kept.has(m.payload.callId)))
      .map((m): RecordBody => {
        const refusal = m.kind === "tool_outcome" ? refusals.get(m.payload.callId) : undefined;
        if (refusal === undefined) return m;
        return { kind: "tool_outcome", payload: { callId: (m.payload as { callId: string }).callId, toolName: TASK_TOOL_NAME, content: [{ type: "text", text: refusal }], isError: true } };
      });
    start.missing = [...repairs, ...spawned, ...missing];
    return pending;
  }

  /** Runs an unanswered call that has no child (as the tool would); `pending` are the batch's calls kept so far. */
  async #reexecute(call: AssistantToolCallPayload, names: readonly string[], pending: ReadonlySet<string>): Promise<CallOutcome> {
    let args: { agent: string; prompt: string };
    try {
      args = checkArguments(call.args, names);
    } catch (err) {
      return { refusal: errorText(err) };
    }
    try {
      return await runCall(this.#spawner, this.#live(), pending, { callId: call.callId, ...args });
    } catch (err) {
      if (isHarnessError(err, "invalid_dispatch")) return { refusal: `task: ${err.message}` };
      throw err;
    }
  }

  /**
   * A spawned `task` call's end is recorded as its `task_spawned` record (once per call), not as
   * a `tool_outcome`; the call joins the turn's suspended calls.
   */
  rewrite(event: AgentEvent, effects: EventEffects): void {
    if (event.type !== "tool_execution_end" || event.toolName !== TASK_TOOL_NAME || event.isError) return;
    const spawned = spawnedOf(event.result);
    if (spawned === undefined) return;
    this.#turn.push(event.toolCallId);
    effects.records = this.#hasSpawnRecord(event.toolCallId) ? [] : [{ kind: "task_spawned", payload: spawned }];
  }

  /** The calls the turn just finished spawned (and forgets them). */
  takeTurn(): string[] {
    const calls = this.#turn;
    this.#turn = [];
    return calls;
  }

  #hasSpawnRecord(callId: string): boolean {
    return this.#records().some((r) => r.kind === "task_spawned" && r.payload.callId === callId);
  }

  /** This submission's spawned calls the log has no outcome for yet: its unsettled children. */
  #live(): Set<string> {
    const live = new Set<string>();
    for (const r of this.#records()) {
      if (r.kind === "task_spawned" && r.submissionId === this.#correlation.submissionId) live.add(r.payload.callId);
      else if (r.kind === "tool_outcome") live.delete(r.payload.callId);
    }
    return live;
  }
}
