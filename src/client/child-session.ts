import type { TaskSpawnedPayload } from "../protocol/records.ts";

/** Where a `task` call's child runs: an ordinary session of its own agent. */
export interface ChildSession {
  agent: string;
  /** `parentInstance:safeCallId`. */
  instance: string;
  /** `task-safeCallId`. */
  session: string;
}

/**
 * The session of the child a `task_spawned` record names, to stream or inspect it like any other
 * (`GET /agents/{agent}/{instance}?session={session}`). The child's instance ends with the call's
 * safe id (it has no `:`), and its session is `task-` and that id.
 */
export function childSessionOf(spawned: Pick<TaskSpawnedPayload, "agent" | "childInstance">): ChildSession {
  const safe = spawned.childInstance.slice(spawned.childInstance.lastIndexOf(":") + 1);
  return { agent: spawned.agent, instance: spawned.childInstance, session: `task-${safe}` };
}
