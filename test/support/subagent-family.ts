/**
 * The parent's log of a three-children family (issue 10), as both shapes must write it: one turn
 * of three `task` calls, their spawns, the three outcomes in whatever order the children settle,
 * and the resumed turn's answer.
 */
export const THREE_CHILDREN_PARENT_LOG = [
  "conversation_created",
  "user_message",
  "assistant_tool_call",
  "assistant_tool_call",
  "assistant_tool_call",
  "assistant_message_completed",
  "task_spawned",
  "task_spawned",
  "task_spawned",
  "tool_outcome",
  "tool_outcome",
  "tool_outcome",
  "assistant_message_completed",
  "submission_settled",
] as const;
