import type { TaskSpawnedPayload } from "../protocol/records.ts";
import { childAddress, childAddressProblem } from "../conversation/task-names.ts";
import { InvalidDispatch, isHarnessError, StoreFailure } from "../errors.ts";
import { correlationOf } from "../ports/observer.ts";
import type { AdmissionStore, ClaimStore } from "../store/store.ts";
import type { Submission } from "../store/submission.ts";
import type { TaskSpawner } from "../drive/task-tool.ts";
import { admit } from "./admission.ts";
import type { EngineContext } from "./engine-context.ts";
import { taskTargetsOf } from "./subagents.ts";

/**
 * The `task` tool's spawner for one attempt of `parent`, or undefined when the subagent policy
 * gives its agent no targets at its depth. A spawn is a durable admission of the child (dispatch
 * id `parentSubmissionId:safeCallId`, instance `parentInstance:safeCallId`, session
 * `task-safeCallId`, `parentRef` on its `conversation_created`), so a re-executed call finds the
 * child it admitted before and admits nothing new.
 */
export function taskSpawner(
  ctx: EngineContext<AdmissionStore & Pick<ClaimStore, "getSubmission">>,
  parent: Submission,
): TaskSpawner | undefined {
  const targets = taskTargetsOf(ctx.subagents, parent.sessionKey.agent, parent.depth);
  if (targets === undefined) return undefined;
  const at = { submissionId: parent.id, instance: parent.sessionKey.instance };
  const existing = async (callId: string): Promise<TaskSpawnedPayload | undefined> => {
    try {
      return spawnOf(callId, await ctx.store.getSubmission(childAddress(at, callId).submissionId));
    } catch (err) {
      if (isHarnessError(err, "submission_not_found")) return undefined;
      throw asStoreFailure(err);
    }
  };
  return {
    targets,
    maxChildrenPerRun: ctx.subagents!.limits.maxChildrenPerRun,
    existing,
    async spawn({ callId, agent, prompt }) {
      const child = childAddress(at, callId);
      const problem = childAddressProblem(at, child);
      if (problem !== undefined) throw new InvalidDispatch(`cannot spawn: ${problem}`);
      let admitted;
      try {
        admitted = await admit(ctx, {
          key: { agent, instance: child.instance, session: child.session },
          dispatchId: child.submissionId,
          // A child runs as its parent's principal (ADR 0043).
          message: { kind: "user", body: prompt, ...(parent.input.principalId !== undefined ? { principalId: parent.input.principalId } : {}) },
          parent: { submissionId: parent.id, callId, conversationId: parent.conversationId, depth: parent.depth },
        });
      } catch (err) {
        // A refusal of the child itself stays a refusal (the call's error result); anything else
        // may have left the child admitted (its row is written before its first record and its
        // doorbell), so the parent's attempt is retried and finds it (see `TaskSpawner`).
        if (isHarnessError(err, "invalid_dispatch")) throw err;
        throw asStoreFailure(err);
      }
      ctx.observe({
        type: "submission_spawned",
        correlation: correlationOf(parent, parent.attemptId),
        childSubmissionId: admitted.submissionId,
        childConversationId: admitted.conversationId,
        agent,
        callId,
      });
      return {
        callId,
        agent,
        childInstance: child.instance,
        childConversationId: admitted.conversationId,
        childSubmissionId: admitted.submissionId,
        prompt,
      };
    },
  };
}

/** The `task_spawned` payload of a child, from its row. */
export function spawnOf(callId: string, child: Submission): TaskSpawnedPayload {
  return {
    callId,
    agent: child.sessionKey.agent,
    childInstance: child.sessionKey.instance,
    childConversationId: child.conversationId,
    childSubmissionId: child.id,
    prompt: child.input.body,
  };
}

/**
 * A store error of a spawn as `StoreFailure` (retry the parent's attempt). A `ClaimLost` here is
 * about the child's rows, never the parent's lease, so it must not read as the parent's
 * interruption either.
 */
function asStoreFailure(err: unknown): StoreFailure {
  return isHarnessError(err, "store_failure") ? err : new StoreFailure(err);
}
