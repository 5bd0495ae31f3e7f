import { danglingToolCalls, danglingToolOutcome } from "../conversation/dangling.ts";
import type { AssistantToolCallPayload, ConversationRecord, RecordBody, RecordPayloads } from "../protocol/records.ts";
import { activeLeafPath, reduce } from "../conversation/reducer.ts";
import type { DispatchMessage } from "../store/submission.ts";

/** What an attempt starts from: the log's active path and what this submission already did. */
export interface Rebuilt {
  /** The active path of the conversation tree. */
  path: ConversationRecord[];
  /**
   * What must be appended before the agent runs, in order: an error outcome for each tool call
   * whose result was never recorded (right after its call), then this submission's input when
   * it is not in the log yet (it is recorded once per submission; a `compact` has none).
   */
  missing: RecordBody[];
  /** The tool calls `missing` answers. */
  dangling: AssistantToolCallPayload[];
  /** Corrective turns of the structured-result loop this submission already had. */
  corrections: number;
  /** Model turns this submission already started (turn numbers go on from there). */
  turns: number;
}

/**
 * Rebuilds an attempt's starting point from the log (the log is the truth; every attempt starts
 * from it): `records` as the whole log or a checkpoint's view of it (`LogView.records`), and
 * `earlier`, the view's records of running submissions that the checkpoint keeps off its path.
 */
export function rebuild(
  records: readonly ConversationRecord[],
  submissionId: string,
  input: DispatchMessage,
  earlier: readonly ConversationRecord[] = [],
): Rebuilt {
  const path = activeLeafPath(reduce(records));
  const dangling = danglingToolCalls(path);
  const missing: RecordBody[] = dangling.map((call) => ({ kind: "tool_outcome", payload: danglingToolOutcome(call) }));
  let corrections = 0;
  let turns = 0;
  let hasInput = false;
  for (const r of [...earlier, ...records]) {
    if (r.submissionId !== submissionId) continue;
    if (r.kind === "signal" || (r.kind === "user_message" && r.payload.origin === undefined)) hasInput = true;
    else if (r.kind === "user_message" && r.payload.origin === "correction") corrections++;
    else if (r.kind === "assistant_message_started") turns++;
  }
  // A manual compaction has no input record: it only compacts.
  if (!hasInput && input.kind !== "compact") missing.push(inputRecord(input));
  return { path, missing, dangling, corrections, turns };
}

/** The record of a submission's input: a `signal`, or a `user_message` with its attachments. */
export function inputRecord(input: DispatchMessage): RecordBody {
  if (input.kind === "signal") {
    const payload: RecordPayloads["signal"] = { type: input.signal?.type ?? "signal", body: input.body };
    if (input.signal?.sender !== undefined) payload.sender = input.signal.sender;
    if (input.signal?.tag !== undefined) payload.tag = input.signal.tag;
    if (input.principalId !== undefined) payload.principalId = input.principalId;
    return { kind: "signal", payload };
  }
  const payload: RecordPayloads["user_message"] = { body: input.body };
  if (input.attachments !== undefined && input.attachments.length > 0) payload.attachments = input.attachments;
  if (input.principalId !== undefined) payload.principalId = input.principalId;
  return { kind: "user_message", payload };
}
