import type { AgentTool, AgentToolResult } from "@earendil-works/pi-agent-core";
import type { TaskSpawnedPayload } from "../protocol/records.ts";
import { errorText, isHarnessError } from "../errors.ts";

/** The tool's name, as the parent's model sees it. */
export const TASK_TOOL_NAME = "task";

/** A `task` target as the tool shows it to the parent's model. */
export interface TaskTarget {
  name: string;
  description?: string;
}

/** One `task` call's arguments. */
export interface TaskCall {
  callId: string;
  agent: string;
  prompt: string;
}

/**
 * What the drive needs from the engine to run `task` calls: the parent's targets and limit, the
 * durable admission of a child, and the lookup of a child already admitted for a call. Both
 * throw `StoreFailure` for a store error (the child may or may not exist then: the parent's
 * attempt is retried and looks again); `spawn` throws `InvalidDispatch` for a child it refuses
 * (nothing admitted).
 */
export interface TaskSpawner {
  /** Sorted by name. */
  readonly targets: readonly TaskTarget[];
  readonly maxChildrenPerRun: number;
  /** Admits the call's child (idempotent by its dispatch id) and says where it lives. */
  spawn(call: TaskCall): Promise<TaskSpawnedPayload>;
  /** The call's child as admitted, or undefined when no child was admitted for it. */
  existing(callId: string): Promise<TaskSpawnedPayload | undefined>;
}

/** `details` of the result of a `task` call that admitted (or found) its child. */
export interface TaskSpawnedDetails {
  taskSpawned: TaskSpawnedPayload;
}

/** The tool description (harness-spec §1.13): the targets, sorted, with their descriptions. */
export function taskToolDescription(targets: readonly TaskTarget[]): string {
  return `Spawn a durable child run. Targets: ${targets.map((t) => (t.description ? `${t.name} — ${t.description}` : t.name)).join("; ")}`;
}

/** The tool's JSON Schema (harness-spec §1.13). */
export function taskToolSchema(targets: readonly TaskTarget[]) {
  return {
    type: "object",
    properties: {
      agent: { type: "string", enum: targets.map((t) => t.name), description: "The agent to spawn as a durable child run" },
      prompt: { type: "string", description: "The self-contained task for the child" },
    },
    required: ["agent", "prompt"],
  } as const;
}

/**
 * The `task` tool of one drive. A call admits its child durably and returns at once; the drive
 * records a `task_spawned` record instead of a `tool_outcome`, and ends the run after the tool
 * batch: the pending call is the suspension point, answered later by the child's settlement.
 * Calls are serialized (parallel calls of one turn see each other's children): a call that
 * already has a child (a re-executed call) admits nothing new; otherwise one past
 * `maxChildrenPerRun` unsettled children is an error result, never a suspension.
 *
 * A store error is not the call's result: it goes to `onStoreError` (the drive stops and its
 * attempt is retried, recording nothing more), and the calls after it in the batch admit nothing.
 * The retried attempt finds the calls unanswered and re-executes them (`TaskSuspension`), so a
 * child admitted before the error is tracked, never left running with no parent waiting on it.
 *
 * @param live the calls of this submission whose children have no outcome yet (the log's view)
 */
export function taskTool(
  spawner: TaskSpawner,
  live: () => ReadonlySet<string>,
  onStoreError: (err: unknown) => void,
): AgentTool<any, TaskSpawnedDetails | undefined> {
  const names = spawner.targets.map((t) => t.name);
  const spawnedHere = new Set<string>();
  let failed: unknown;
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const run = queue.then(work, work);
    queue = run.catch(() => {});
    return run;
  };
  return {
    name: TASK_TOOL_NAME,
    label: "Task",
    description: taskToolDescription(spawner.targets),
    parameters: taskToolSchema(spawner.targets) as any,
    // Checked here, before pi's own validation, so a refused call reads as the spec words it.
    prepareArguments: (args: unknown) => checkArguments(args, names),
    execute: (callId, params: { agent: string; prompt: string }) =>
      serial(async (): Promise<AgentToolResult<TaskSpawnedDetails | undefined>> => {
        // Never recorded: the drive has stopped; its retry re-executes this call.
        if (failed !== undefined) return refusal(`task: not run after a store error: ${errorText(failed)}`);
        try {
          const outcome = await runCall(spawner, live(), spawnedHere, { callId, agent: params.agent, prompt: params.prompt });
          if (outcome.spawned === undefined) return refusal(outcome.refusal);
          spawnedHere.add(callId);
          return {
            content: [{ type: "text", text: `spawned ${outcome.spawned.agent} as ${outcome.spawned.childSubmissionId}; its outcome will be this call's result` }],
            details: { taskSpawned: outcome.spawned },
          };
        } catch (err) {
          if (isHarnessError(err, "invalid_dispatch")) return refusal(`task: ${err.message}`);
          failed = err;
          onStoreError(err);
          return refusal(`task: ${errorText(err)}`);
        }
      }),
  };
}

/** A call's child (found or admitted now), or the refusal that answers it instead. */
export type CallOutcome = { spawned: TaskSpawnedPayload; refusal?: undefined } | { spawned?: undefined; refusal: string };

/**
 * Runs one `task` call (harness-spec §1.13, Execute steps 3-5): the replay short-circuit first
 * (a call that has a child admits nothing new), then the fan-out bound over `live` and `spawned`
 * (the calls with unsettled children), then the admission. Store errors and `InvalidDispatch`
 * are thrown.
 */
export async function runCall(
  spawner: TaskSpawner,
  live: ReadonlySet<string>,
  spawned: ReadonlySet<string>,
  call: TaskCall,
): Promise<CallOutcome> {
  const found = await spawner.existing(call.callId);
  if (found !== undefined) return { spawned: found };
  const running = new Set([...live, ...spawned]);
  if (running.size >= spawner.maxChildrenPerRun) {
    return {
      refusal: `task: child limit reached (${running.size} live, max ${spawner.maxChildrenPerRun}); wait for a running child to settle or serialize the work`,
    };
  }
  return { spawned: await spawner.spawn(call) };
}

function refusal(text: string): AgentToolResult<undefined> {
  return { content: [{ type: "text", text }], details: undefined, isError: true };
}

/** The arguments, or a thrown error whose message pi turns into the call's error result. */
export function checkArguments(args: unknown, names: readonly string[]): { agent: string; prompt: string } {
  const a = args as Record<string, unknown> | null;
  if (a === null || typeof a !== "object" || Array.isArray(a)) throw new Error("task: invalid arguments: expected an object");
  if (typeof a.agent !== "string") throw new Error("task: invalid arguments: agent must be a string");
  if (typeof a.prompt !== "string") throw new Error("task: invalid arguments: prompt must be a string");
  if (!names.includes(a.agent)) {
    throw new Error(`task: ${JSON.stringify(a.agent)} is not a spawnable agent; allowed targets: ${names.join(", ")}`);
  }
  return { agent: a.agent, prompt: a.prompt };
}

/** The spawn a `task` call's result carries, if it admitted (or found) its child. */
export function spawnedOf(result: unknown): TaskSpawnedPayload | undefined {
  const details = (result as { details?: Partial<TaskSpawnedDetails> } | undefined)?.details;
  return details?.taskSpawned;
}
