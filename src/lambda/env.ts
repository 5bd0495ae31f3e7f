/**
 * The environment variables the `Harness` construct sets on its Lambda functions: the contract
 * between the construct (`src/cdk`) and the handlers (`src/lambda`). This module imports nothing, so a handler may import it
 * without pulling the CDK into its bundle.
 */
export const HARNESS_ENV = {
  /** DynamoDB table name (every function). */
  tableName: "TABLE_NAME",
  /** S3 bucket for spilled record payloads and attachments (every function). */
  bucketName: "BUCKET_NAME",
  /** URL of the SQS FIFO work queue, the doorbell (every function). */
  queueUrl: "QUEUE_URL",
  /** URL of the work queue's dead-letter queue, which the dlq function drains on the sweep schedule (dlq only). */
  deadLetterQueueUrl: "DEAD_LETTER_QUEUE_URL",
  /**
   * Milliseconds after which the http function ends an SSE response by itself (http only). Always
   * well below the function timeout, so a stream ends cleanly and EventSource reconnects with
   * Last-Event-ID instead of being cut by Lambda.
   */
  streamMaxMs: "HARNESS_STREAM_MAX_MS",
  /**
   * Who authenticates callers (http only): `AWS_IAM` (the function URL, SigV4), `NONE` (nobody in
   * front: the Hono app must install its own bearer/JWT middleware, and a handler may refuse to
   * serve otherwise) or `API_GATEWAY` (the REST API's IAM auth or authorizer).
   */
  urlAuth: "HARNESS_URL_AUTH",
  /**
   * Comma-separated origins whose pages may call the API from a browser (http only): the app's
   * `cors` option (`hono/cors`), the same in every shape. Unset: none, and a browser request
   * from another origin is refused with 403.
   */
  corsOrigins: "HARNESS_CORS_ORIGINS",
  /**
   * The chat page on the http function (the construct's `chatPage`, http only): unset or empty,
   * none; otherwise a JSON object of `mountChatPage`'s `{title?, placeholder?, signIn?: {url},
   * instanceClaim?}` (`{}` for the defaults), served at `/`.
   */
  chatPage: "HARNESS_CHAT_PAGE",
  /**
   * The agent names, comma-separated (http and sweeper only). These functions never run an agent,
   * so they do not bundle the agents module: admission only needs to know which agents exist.
   */
  agentNames: "HARNESS_AGENT_NAMES",
  /**
   * The agents module's `subagentLimits` as JSON, defaults applied (http, sweeper and schedule
   * only, set when the module exports them). These functions settle parents too (a cancel, a
   * recovery) and must honour `onParentTerminal` without loading the module (ADR 0023).
   */
  subagentLimits: "HARNESS_SUBAGENT_LIMITS",
  /**
   * Where the function's secrets live, as JSON: name → `{secretsManager: arn, field?}` or
   * `{ssm: parameterName}` (only on the functions granted each; see the construct's `secrets`).
   * Read at cold start into `process.env` (`lambda/secrets.ts`); the values are never here.
   */
  secrets: "HARNESS_SECRETS",
  /**
   * The construct's `deltaRetention` in milliseconds (worker only, set when the prop is): how long
   * a model turn's streaming deltas are kept (ADR 0034). Default 1 h.
   */
  deltaRetentionMs: "HARNESS_DELTA_RETENTION_MS",
  /**
   * The construct's `conversationRetention` in milliseconds (every function, set when the prop
   * is): the stores keep the index of idle sessions, and the sweep deletes a conversation idle
   * that long (ADR 0034). Unset: kept until deleted.
   */
  conversationRetentionMs: "HARNESS_CONVERSATION_RETENTION_MS",
  /** Powertools service name, the same for all functions (the function role is in the logs). */
  serviceName: "POWERTOOLS_SERVICE_NAME",
  /** Powertools log level (`DEBUG`, `INFO`, `WARN`, `ERROR`). */
  logLevel: "POWERTOOLS_LOG_LEVEL",
  /** Powertools metrics namespace. */
  metricsNamespace: "POWERTOOLS_METRICS_NAMESPACE",
} as const;

/** The four function roles of the serverless shape (DESIGN §2: `lambda/{http,worker,dlq,sweeper}.ts`). */
export type HarnessFunctionRole = "http" | "worker" | "dlq" | "sweeper";

/** The function roles, in a fixed order. */
export const HARNESS_FUNCTION_ROLES: readonly HarnessFunctionRole[] = ["http", "worker", "dlq", "sweeper"];

/**
 * The roles whose functions know the agents by name only (`HARNESS_AGENT_NAMES`) and do not
 * bundle the agents module. The worker runs agents; the dlq function initializes the agent to
 * learn its attempt budget (`maxAttempts`), so both bundle it (provider SDKs in lazy chunks).
 */
export const NAMES_ONLY_ROLES: readonly HarnessFunctionRole[] = ["http", "sweeper"];

/** Separator of the names in `HARNESS_AGENT_NAMES` (agent names never contain it). */
export const AGENT_NAMES_SEPARATOR = ",";

/** The bundler alias through which every handler imports the user's `agents` record. */
export const AGENTS_ALIAS = "#harness-agents";
