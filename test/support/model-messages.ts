/**
 * Reading the messages a scripted model is sent (pi's context: user, assistant and toolResult
 * messages), for stateless scripts that decide from the transcript alone.
 */
export type ModelMessage = { role: string; content: unknown; toolCallId?: string };

/** A message's text: its string content, or its text blocks joined. */
export function textOf(m: ModelMessage | undefined): string {
  return typeof m?.content === "string" ? m.content : ((m?.content as { text?: string }[]) ?? []).map((c) => c.text ?? "").join("");
}

/** The tool results in `messages`, in order. */
export function toolResults(messages: unknown): ModelMessage[] {
  return (messages as ModelMessage[]).filter((m) => m.role === "toolResult");
}

/** The text of the last user message. */
export function lastUserText(messages: unknown): string {
  return textOf([...(messages as ModelMessage[])].reverse().find((m) => m.role === "user"));
}
