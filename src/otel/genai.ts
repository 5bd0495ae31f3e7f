/**
 * The OpenTelemetry GenAI semantic conventions this instrumentation writes: attribute and metric
 * names, and the provider names. They are still "development" conventions, so, as the
 * semantic-conventions package advises libraries, the strings are copied here instead of
 * importing its incubating entry point.
 */

export const ATTR = {
  operationName: "gen_ai.operation.name",
  providerName: "gen_ai.provider.name",
  agentName: "gen_ai.agent.name",
  agentDescription: "gen_ai.agent.description",
  conversationId: "gen_ai.conversation.id",
  requestModel: "gen_ai.request.model",
  responseModel: "gen_ai.response.model",
  responseId: "gen_ai.response.id",
  finishReasons: "gen_ai.response.finish_reasons",
  timeToFirstChunk: "gen_ai.response.time_to_first_chunk",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
  cacheReadTokens: "gen_ai.usage.cache_read.input_tokens",
  cacheCreationTokens: "gen_ai.usage.cache_creation.input_tokens",
  reasoningTokens: "gen_ai.usage.reasoning.output_tokens",
  tokenType: "gen_ai.token.type",
  toolName: "gen_ai.tool.name",
  toolCallId: "gen_ai.tool.call.id",
  toolType: "gen_ai.tool.type",
  errorType: "error.type",
} as const;

/** The harness's own attributes (not GenAI conventions): where a span belongs in the harness. */
export const HARNESS_ATTR = {
  instance: "harness.instance",
  session: "harness.session",
  submissionId: "harness.submission.id",
  attemptId: "harness.attempt.id",
  /** Attempts charged so far, this one included. */
  attemptCount: "harness.attempt.count",
  /** A stand-in for an attempt whose process died before it could end its span. */
  attemptLost: "harness.attempt.lost",
  turnId: "harness.turn.id",
  childSubmissionId: "harness.child.submission.id",
  /** What a link points at: `parent`, `child` or `invocation`. */
  link: "harness.link",
  parentCallId: "harness.parent.call.id",
  status: "harness.submission.status",
  errorCode: "harness.error.code",
  decision: "harness.recovery.decision",
} as const;

export const OPERATION = {
  invokeAgent: "invoke_agent",
  chat: "chat",
  executeTool: "execute_tool",
} as const;

export const METRIC = {
  tokenUsage: "gen_ai.client.token.usage",
  operationDuration: "gen_ai.client.operation.duration",
  /** Not a GenAI convention: settled submissions by status and error code. */
  settled: "harness.submissions.settled",
  /** Not a GenAI convention: recoveries by decision. */
  recoveries: "harness.recoveries",
} as const;

/** The conventions' advised histogram buckets. */
export const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
export const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

/** pi-ai provider ids whose `gen_ai.provider.name` the conventions spell otherwise. */
const PROVIDER_NAMES: Record<string, string> = {
  "amazon-bedrock": "aws.bedrock",
  azure: "azure.ai.openai",
  google: "gcp.gemini",
  "google-vertex": "gcp.vertex_ai",
  mistral: "mistral_ai",
  "openai-codex": "openai",
  xai: "x_ai",
};

/** `gen_ai.provider.name` of a pi-ai provider id (a provider the conventions do not name keeps its id). */
export function providerName(piProvider: string): string {
  return PROVIDER_NAMES[piProvider] ?? piProvider;
}

/** `gen_ai.response.finish_reasons` of a pi-ai stop reason. */
export function finishReason(stopReason: string): string {
  switch (stopReason) {
    case "toolUse":
      return "tool_call";
    default:
      return stopReason;
  }
}
