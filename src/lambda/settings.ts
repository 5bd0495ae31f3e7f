import type { SubagentLimits } from "../agent/subagent-policy.ts";
import { AGENT_NAMES_SEPARATOR, HARNESS_ENV } from "./env.ts";
import { RUNTIME_DEFAULTS, STREAM_MAX_MS, STREAM_POLL } from "../runtime/defaults.ts";
import { DEFAULT_TURN_TIMEOUT_MS } from "../agent/agent-setup.ts";
import { parseCorsOrigins } from "../http/cors-origins.ts";
import { DEFAULT_DELTA_RETENTION_MS } from "../conversation/delta-folding.ts";

/**
 * How long a queued head may wait for its claim before the sweeper rings it again. A healthy
 * doorbell is claimed within a cold start; with the sweep's 1-minute schedule a session whose
 * doorbell died with its invocation runs again within about 20 + 60 s (ADR 0028).
 */
export const DEFAULT_STALE_QUEUED_MS = 20_000;

/**
 * Everything the handlers read from the environment. The `Harness` construct sets the
 * `HARNESS_ENV` names (env.ts); the `HARNESS_*` tuning knobs below are optional and reach a
 * deployment through the construct's `environment` prop.
 */
export interface LambdaSettings {
  tableName: string;
  bucketName: string;
  queueUrl: string;
  /** The dead-letter queue's URL (`DEAD_LETTER_QUEUE_URL`); "" in functions that do not drain it. */
  deadLetterQueueUrl: string;
  /** `HARNESS_LEASE_MS`, default 30 s: the engine lease; messages are held for about as long. */
  leaseMs: number;
  /**
   * `HARNESS_YIELD_MARGIN_MS`: the worker hands the run to a new invocation at the next turn
   * boundary once less than this much time is left. Default 60 s + the default turn bound
   * (10 min), so a turn started just before the margin still fits. Lower it together with the
   * agents' `turnTimeoutMs` / `toolTimeoutMs`.
   */
  yieldMarginMs: number;
  /**
   * `HARNESS_STREAM_MAX_MS`, default `STREAM_MAX_MS.serverless` (5 min): an SSE response ends
   * itself after this long (the construct always sets it, below the http function's timeout).
   */
  streamMaxMs: number;
  /**
   * `HARNESS_STREAM_POLL_MS` (default 100) and `HARNESS_STREAM_MAX_POLL_MS` (default 1000): an SSE
   * stream's poll of the log, first interval and ceiling of its backoff (`STREAM_POLL.serverless`).
   * A shorter first interval brings deltas sooner and costs more reads while a run streams.
   */
  streamPoll: { pollMs: number; maxPollMs: number };
  /**
   * Delta batching of the worker: a text delta record is written once `HARNESS_FLUSH_BYTES`
   * (default 1024) are pending or the oldest pending fragment is `HARNESS_FLUSH_INTERVAL_MS`
   * (default 200) old. Each flush is one DynamoDB write (usually 1 unit), so a longer interval
   * makes a slowly streaming model cheaper and its live text chunkier (docs/adr/0009). A
   * message's first fragment is written at once (docs/adr/0036).
   */
  flushPolicy: { bytes: number; intervalMs: number };
  /**
   * `HARNESS_STALE_QUEUED_MS`, default 20 s: the sweeper re-rings queued heads idle this long (a
   * doorbell lost, or left in flight by an invocation that died before its handler: with the
   * 1-minute sweep a session runs again within about 80 s, ADR 0028).
   */
  staleQueuedMs: number;
  /** `HARNESS_DELTA_RETENTION_MS` (the construct's `deltaRetention`), default 1 h: lean history (ADR 0034). */
  deltaRetentionMs: number;
  /** `HARNESS_CONVERSATION_RETENTION_MS` (the construct's `conversationRetention`): unset keeps conversations. */
  conversationRetentionMs: number | undefined;
  /** `HARNESS_URL_AUTH`: `AWS_IAM`, `NONE` or `API_GATEWAY` (who authenticates callers). */
  urlAuth: string;
  /** `HARNESS_CORS_ORIGINS`: origins whose pages may call the API from a browser (the app's `cors`). */
  corsOrigins: string[];
  /** `HARNESS_CHAT_PAGE`: the chat page's options when the http function serves it at `/`; undefined: no page. */
  chatPage: ChatPageSetting | undefined;
  /**
   * `HARNESS_CALLBACK_TOKEN`: comma-separated tokens accepted on `/callbacks/*` instead of the
   * app's auth (the construct's `callbacks.bearerToken`), for the third parties that answer
   * callbacks; unset, `/callbacks/*` has the app's auth.
   */
  callbackTokens: string[];
  /** `HARNESS_ALLOW_UNAUTHENTICATED=true` serves `HARNESS_URL_AUTH=NONE` with no token (local use). */
  allowUnauthenticated: boolean;
  serviceName: string;
  metricsNamespace: string;
}

/** Reads and checks the settings; throws naming the first missing or malformed variable. */
export function readSettings(env: NodeJS.ProcessEnv = process.env): LambdaSettings {
  const required = (name: string): string => {
    const v = env[name];
    if (!v) throw new Error(`missing environment variable ${name}`);
    return v;
  };
  const ms = (name: string, fallback: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === "") return fallback;
    const v = Number(raw);
    if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number of milliseconds, got ${raw}`);
    return v;
  };
  const serviceName = env[HARNESS_ENV.serviceName] || "resolute-harness";
  return {
    tableName: required(HARNESS_ENV.tableName),
    bucketName: required(HARNESS_ENV.bucketName),
    queueUrl: required(HARNESS_ENV.queueUrl),
    deadLetterQueueUrl: env[HARNESS_ENV.deadLetterQueueUrl] ?? "",
    leaseMs: ms("HARNESS_LEASE_MS", RUNTIME_DEFAULTS.leaseMs),
    yieldMarginMs: ms("HARNESS_YIELD_MARGIN_MS", 60_000 + DEFAULT_TURN_TIMEOUT_MS),
    streamMaxMs: ms(HARNESS_ENV.streamMaxMs, STREAM_MAX_MS.serverless),
    streamPoll: {
      pollMs: ms("HARNESS_STREAM_POLL_MS", STREAM_POLL.serverless.pollMs),
      maxPollMs: ms("HARNESS_STREAM_MAX_POLL_MS", STREAM_POLL.serverless.maxPollMs),
    },
    flushPolicy: {
      bytes: ms("HARNESS_FLUSH_BYTES", RUNTIME_DEFAULTS.flushPolicy.bytes),
      intervalMs: ms("HARNESS_FLUSH_INTERVAL_MS", RUNTIME_DEFAULTS.flushPolicy.intervalMs),
    },
    staleQueuedMs: ms("HARNESS_STALE_QUEUED_MS", DEFAULT_STALE_QUEUED_MS),
    deltaRetentionMs: ms(HARNESS_ENV.deltaRetentionMs, DEFAULT_DELTA_RETENTION_MS),
    conversationRetentionMs: env[HARNESS_ENV.conversationRetentionMs] ? ms(HARNESS_ENV.conversationRetentionMs, 0) : undefined,
    urlAuth: env[HARNESS_ENV.urlAuth] || "AWS_IAM",
    corsOrigins: parseCorsOrigins(env[HARNESS_ENV.corsOrigins], HARNESS_ENV.corsOrigins),
    chatPage: parseChatPage(env[HARNESS_ENV.chatPage]),
    callbackTokens: (env.HARNESS_CALLBACK_TOKEN ?? "").split(",").map((t) => t.trim()).filter(Boolean),
    allowUnauthenticated: env.HARNESS_ALLOW_UNAUTHENTICATED === "true",
    serviceName,
    metricsNamespace: env[HARNESS_ENV.metricsNamespace] || serviceName,
  };
}

/**
 * The agent names of a function that knows agents by name only (`HARNESS_AGENT_NAMES`,
 * comma-separated; the `Harness` construct sets it on the http and sweeper functions).
 * @throws when the variable is missing or empty
 */
export function agentNamesFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  const names = (env[HARNESS_ENV.agentNames] ?? "")
    .split(AGENT_NAMES_SEPARATOR)
    .map((n) => n.trim())
    .filter(Boolean);
  if (names.length === 0) throw new Error(`missing environment variable ${HARNESS_ENV.agentNames} (the agent names, comma-separated)`);
  return names;
}

/**
 * The subagent limits of a function that knows agents by name only (`HARNESS_SUBAGENT_LIMITS`,
 * JSON; the `Harness` construct sets it from the agents module's `subagentLimits`), or undefined
 * when unset (the defaults apply). Only the shape is checked here; `createRuntime` checks the fields.
 * @throws naming the variable when it is not a JSON object
 */
export function subagentLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): SubagentLimits | undefined {
  const raw = env[HARNESS_ENV.subagentLimits];
  if (raw === undefined || raw === "") return undefined;
  let limits: unknown;
  try {
    limits = JSON.parse(raw);
  } catch {
    limits = undefined;
  }
  if (limits === null || typeof limits !== "object" || Array.isArray(limits)) {
    throw new Error(`${HARNESS_ENV.subagentLimits} must be a JSON object (the agents module's subagentLimits), got ${raw}`);
  }
  return limits as SubagentLimits;
}

/**
 * Largest `POST /attachments` body the http function takes: a function URL takes requests of up
 * to 6 MB, and binary bodies arrive base64-encoded (4/3 larger). Larger files take a direct
 * upload to S3 (ADR 0034).
 */
export const LAMBDA_MAX_UPLOAD_BYTES = 4 * 1024 * 1024;

/** The chat page's options on the http function (`HARNESS_CHAT_PAGE`), as `mountChatPage` takes them. */
export interface ChatPageSetting {
  title?: string;
  placeholder?: string;
  signIn?: { url: string };
  instanceClaim?: string;
}

/** Parses `HARNESS_CHAT_PAGE`: empty → no page; else a JSON object of {@link ChatPageSetting}. */
export function parseChatPage(raw: string | undefined): ChatPageSetting | undefined {
  if (raw === undefined || raw.trim() === "") return undefined;
  const fail = (why: string): never => {
    throw new Error(`${HARNESS_ENV.chatPage} must be a JSON object {title?, placeholder?, signIn?: {url}, instanceClaim?}: ${why}`);
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    fail("not JSON");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) fail("not an object");
  const { title, placeholder, signIn, instanceClaim, ...rest } = parsed as Record<string, unknown>;
  if (Object.keys(rest).length > 0) fail(`unknown ${Object.keys(rest).join(", ")}`);
  const setting: ChatPageSetting = {};
  for (const [name, value] of [["title", title], ["placeholder", placeholder], ["instanceClaim", instanceClaim]] as const) {
    if (value === undefined) continue;
    if (typeof value !== "string" || value === "") fail(`${name} must be a non-empty string`);
    setting[name] = value as string;
  }
  if (signIn !== undefined) {
    const url = (signIn as { url?: unknown } | null)?.url;
    if (typeof url !== "string" || url === "") fail("signIn must be {url}");
    setting.signIn = { url: url as string };
  }
  return setting;
}
