import type { Duration, RemovalPolicy } from "aws-cdk-lib";
import type { FunctionUrlAuthType } from "aws-cdk-lib/aws-lambda";
import type { RetentionDays } from "aws-cdk-lib/aws-logs";
import type { IBucket } from "aws-cdk-lib/aws-s3";
import type { ITopic } from "aws-cdk-lib/aws-sns";
import type { SubagentLimits } from "../agent/subagent-policy.ts";
import type { HarnessFunctionRole } from "../lambda/env.ts";
import type { HarnessApiGatewayOptions } from "./harness-api.ts";
import type { HarnessAuthOptions } from "./harness-auth.ts";
import type { HarnessSecret } from "./harness-secrets.ts";
import type { HarnessCallbacksOptions } from "./harness-callbacks.ts";
import type { HarnessSchedule } from "./harness-schedules.ts";

/** Log levels understood by Powertools for AWS Lambda. */
export type HarnessLogLevel = "DEBUG" | "INFO" | "WARN" | "ERROR";

/** Which Bedrock models the worker may invoke. */
export interface HarnessBedrockOptions {
  /**
   * ARNs of foundation models and inference profiles the worker may invoke.
   * @default every foundation model, and every inference profile and application inference
   *   profile of this account and region
   */
  readonly resources?: string[];
  /**
   * Attempts the AWS SDK makes per Bedrock request, set as `AWS_MAX_ATTEMPTS` on the functions
   * that run agents (worker, dlq). The default, 1, leaves retrying to the harness's own attempt
   * budget and backoff (the SDK would otherwise try 3 times per harness attempt). It applies to
   * every AWS SDK client in those functions without an explicit `maxAttempts` (your tools' too);
   * the harness's own clients pin theirs. Your `environment` wins over it.
   * @default 1
   */
  readonly sdkMaxAttempts?: number;
}

/**
 * OpenTelemetry on the functions: the GenAI spans and metrics of `resolute-harness/otel`, with the
 * OpenTelemetry SDK the app sets up in its own module, bundled into every function.
 */
export interface HarnessOpenTelemetryOptions {
  /**
   * Path of the app's module that sets up the OpenTelemetry SDK: a tracer provider with its
   * exporter (OTLP to your backend, or to a collector extension layer you add), a meter provider
   * if you want the metrics, registered globally or exported as `tracerProvider` /
   * `meterProvider` (and `attributes`, added to every span). It runs once per container before
   * the handler; the harness flushes both providers at the end of every invocation (Lambda
   * freezes the process after it). Relative paths are resolved against the current directory.
   */
  readonly setupEntry: string;
}

/** Tracing of the functions (ADR 0030). */
export interface HarnessTracingOptions {
  /**
   * AWS X-Ray: Lambda's active tracing on every function (its roles may write traces) and the
   * Powertools Tracer in the handlers: each invocation a `## <function>` subsegment annotated with
   * the cold start and service, the DynamoDB and SQS calls as subsegments, each attempt an
   * `invoke_agent <agent>` subsegment (with `chat <model>` and `execute_tool <name>` inside)
   * annotated with its submission, attempt and agent, so X-Ray filter expressions find a
   * submission's traces. Response and error bodies are not recorded. Needs
   * `@aws-lambda-powertools/tracer` installed (an optional peer; bundled only when this is on).
   *
   * Cost: X-Ray bills $5.00 per million traces recorded after 100,000 free a month, and $0.50 per
   * million retrieved or scanned; Lambda samples the first request each second and 5 % of the rest.
   * @default false
   */
  readonly xray?: boolean;
  /**
   * OpenTelemetry GenAI spans and metrics from every function, with the SDK in the bundle (not the
   * ADOT layer: see ADR 0030). Needs `@opentelemetry/api` and the SDK packages your setup module
   * imports installed.
   * @default off
   */
  readonly openTelemetry?: HarnessOpenTelemetryOptions;
}

/** Properties of the {@link Harness} construct. */
export interface HarnessProps {
  /**
   * Path of the module that exports `agents: Record<string, AgentDefinition>`. The worker and dlq
   * handlers import it as `#harness-agents` (an esbuild alias), so the user's agents are compiled
   * into their bundles; model provider SDKs behind a dynamic `import()` land in separate chunks,
   * loaded on first use. Relative paths are resolved against the current directory.
   */
  readonly agentsEntry: string;

  /**
   * The names of the agents `agentsEntry` exports. The http and sweeper functions never run an
   * agent, so they do not bundle the agents module: they receive these names as
   * `HARNESS_AGENT_NAMES` (admission answers 404 `unknown_agent` for any other name).
   * @default discovered at synth by importing `agentsEntry` in a child Node process (Node ≥ 22.18
   *   strips TypeScript types); synth fails with a message asking for this prop if that fails
   */
  readonly agentNames?: readonly string[];

  /**
   * The agents module's `subagentLimits`. The http and sweeper functions settle parents too (a
   * cancel, a recovery) without loading the module, so they receive these as
   * `HARNESS_SUBAGENT_LIMITS` and honour `onParentTerminal` (ADR 0023).
   * @default discovered with the agent names; when `agentNames` is given, nothing is discovered:
   *   give these too if the module exports any
   */
  readonly subagentLimits?: SubagentLimits;

  /**
   * Ship source maps (without sources) beside each bundle, so stack traces in the logs point into
   * the TypeScript sources. The bundle maps a stack when it is formatted, reading a file's map on
   * the first stack through that file; a cold start reads no map (Node's `--enable-source-maps`,
   * which parses every map as its file loads, is not set: ADR 0037).
   * @default true
   */
  readonly sourceMaps?: boolean;

  /**
   * Handler modules per function role (for tests and forks; a handler must do what the
   * shipped one does).
   * @default the handlers shipped with this package (`resolute-harness/dist/lambda/<role>.js`)
   */
  readonly handlerEntries?: Partial<Record<HarnessFunctionRole, string>>;

  /**
   * What happens to the table, the bucket and the log groups when the stack is deleted or they
   * are replaced. With `DESTROY`, a non-empty bucket still makes the deletion fail (no custom
   * resource empties it).
   *
   * Cost: `RETAIN` keeps the data after the stack is gone, and keeps billing its storage
   * (DynamoDB about $0.25 per GB-month, S3 $0.023, CloudWatch Logs $0.03, us-east-1 list prices)
   * until you delete it by hand; `DESTROY` loses every conversation with the stack.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * DynamoDB deletion protection.
   * @default true unless `removalPolicy` is `DESTROY`
   */
  readonly tableDeletionProtection?: boolean;
  /**
   * DynamoDB point-in-time recovery.
   * @default true
   */
  readonly pointInTimeRecovery?: boolean;
  /**
   * Delete bucket objects this long after they were written. Spilled payloads and attachments are
   * referenced by records for the conversation's lifetime, so set this only when conversations
   * expire at least as early.
   * @default objects never expire
   */
  readonly objectExpiration?: Duration;
  /**
   * Lean history (ADR 0034): how long a model turn's streaming delta records are kept, counted
   * from the turn's start. Then reads leave them out (the completed message records hold their
   * text) and DynamoDB's TTL deletes the log items that hold only deltas, at no write cost. At
   * least 15 minutes (a model turn is bounded at 10 by default), so live readers get every delta.
   * @default Duration.hours(1)
   */
  readonly deltaRetention?: Duration;
  /**
   * Conversation retention (ADR 0034): a conversation idle this long — nothing of its session
   * unsettled and nothing new since — is deleted by the sweeper with its records, submissions,
   * checkpoints, subagents' conversations and the blobs no other conversation references, as
   * `DELETE /agents/:agent/:instance` does. Its age counts from its last activity, not its
   * creation. At least an hour. The stores then keep an index of idle sessions (a few write
   * units per turn) and the sweeper is granted the deletion.
   * @default conversations are kept until deleted
   */
  readonly conversationRetention?: Duration;
  /**
   * Bucket receiving the harness bucket's server access logs.
   * @default no access logs (CloudTrail data events are the audit path)
   */
  readonly accessLogsBucket?: IBucket;

  /**
   * Function timeout of the worker; a run longer than this continues in a new invocation.
   * @default Duration.minutes(15)
   */
  readonly workerTimeout?: Duration;
  /**
   * Memory of the worker, MB (Lambda gives CPU in proportion). The default was chosen by
   * measurement (ADR 0032: the soak's mix with 2 MB tool outputs and 200 KB inputs peaks well
   * under it); raise it for agents whose tools hold large data in memory, or to get more CPU for
   * CPU-bound tools (1,769 MB is one full vCPU). Lambda bills duration by it.
   * @default 256
   */
  readonly workerMemorySize?: number;
  /**
   * Reserved concurrency of the worker: at most this many runs at once, and that many always
   * available to it whatever other functions of the account do.
   *
   * Cost: nothing per month, but the reserved capacity is taken from the account's pool (the
   * deployment fails when the unreserved rest would drop below 10), and runs beyond it wait: the
   * event source's throttled deliveries count as SQS receives (see `maxReceiveCount`). To only cap
   * the worker, `workerMaxConcurrency` does it without throttles.
   * @default no reservation
   */
  readonly workerReservedConcurrency?: number;
  /**
   * Upper bound of concurrent worker invocations the SQS event source starts (2–1000). At most
   * `workerReservedConcurrency` when both are set (synth refuses more: Lambda would throttle the
   * surplus, and each throttle counts as a receive toward the dead-letter queue).
   * @default no bound beyond the number of active sessions (FIFO message groups)
   */
  readonly workerMaxConcurrency?: number;
  /**
   * Default visibility timeout of the work queue. Must be at least the worker timeout (Lambda
   * refuses the event source otherwise); the worker shortens its own message's visibility to
   * about one lease on receipt.
   * @default workerTimeout + 1 minute
   */
  readonly queueVisibilityTimeout?: Duration;
  /**
   * Receives after which SQS moves a doorbell to the dead-letter queue. Receive counts are not
   * attempts (throttles, init crashes and stale doorbells count too), so keep this well above
   * the attempt budget (default 10).
   * @default 30
   */
  readonly maxReceiveCount?: number;
  /**
   * FIFO high-throughput mode (throughput and deduplication scoped per message group). Senders
   * use fresh deduplication ids, so the narrower deduplication scope changes nothing else.
   * @default true
   */
  readonly highThroughputFifo?: boolean;

  /**
   * How long the http function keeps one SSE response open before ending it itself (clients
   * reconnect with Last-Event-ID). A client that disconnects does not stop the invocation, so
   * this also bounds what an abandoned stream costs.
   * @default Duration.minutes(5) (`STREAM_MAX_MS.serverless`)
   */
  readonly streamMaxDuration?: Duration;
  /**
   * Function timeout of the http function; must exceed `streamMaxDuration` by at least 10 s.
   * @default streamMaxDuration + 1 minute
   */
  readonly httpTimeout?: Duration;
  /**
   * Memory of the http function, MB. It is held open by every SSE viewer while a run streams, so
   * it is most of a chat product's Lambda bill (`npm run bench -- cost`); the default holds the
   * measured mix with headroom (ADR 0032). Raise it if your middleware holds large data.
   * @default 256
   */
  readonly httpMemorySize?: number;
  /**
   * Authentication of the function URL. `NONE` is for an app that checks a bearer token or JWT
   * itself (Hono middleware); the handler learns the mode from `HARNESS_URL_AUTH`. With
   * `apiGateway`, `AWS_IAM` puts IAM authorization on the API's methods and `NONE` none.
   *
   * Synth refuses `NONE` without `HARNESS_BEARER_TOKEN` (in `secrets`) or `auth` unless
   * `apiGateway` has an `authorizer`: behind a function URL the http function would refuse to
   * start, behind the API anyone could run your agents. `HARNESS_ALLOW_UNAUTHENTICATED: "true"` in
   * `environment` opens it on purpose. With `auth`, `AWS_IAM` is refused (a browser holding a
   * user's token cannot sign).
   * @default FunctionUrlAuthType.AWS_IAM, or `NONE` with `auth`
   */
  readonly urlAuthType?: FunctionUrlAuthType;
  /**
   * Users who sign in (ADR 0045): the http function verifies their JWTs (`AUTH_ISSUER`,
   * `AUTH_AUDIENCE`, `AUTH_JWKS_URL`, `AUTH_OWNER_CLAIM` on that function alone) and applies the
   * default policy (ADR 0043: a user reaches the instance named by their id, or by `ownerClaim`).
   * The function URL is then `authType: NONE` (the app checks every request). With `apiGateway`,
   * `cognito` also puts a Cognito user pools authorizer on every method but the CORS preflights
   * and the callback route, and the app still verifies and authorizes; a REST API has no JWT
   * authorizer, so with `jwt` the app alone verifies (or give `apiGateway.authorizer`).
   * `HARNESS_BEARER_TOKEN` in `secrets` may stand beside it for the operator (a Cognito authorizer
   * turns that token away at the API: give operators the `operator` group there instead).
   * `callbacks` keeps its own token and no authorizer.
   *
   * Cost: none from the harness (the http function fetches the issuer's keys once per container
   * and keeps them 10 minutes). Cognito bills its monthly active users beyond its free tier.
   * @default no users: the callers are whoever `urlAuthType` (or a bearer token) lets in, each the operator
   */
  readonly auth?: HarnessAuthOptions;
  /**
   * Origins of the web pages that may call the harness from a browser (`https://app.example.com`,
   * exact origins, or `*`). They reach both the HTTP app (`HARNESS_CORS_ORIGINS`: a request
   * carrying another `Origin` is refused with 403 before anything is stored) and the function URL's
   * CORS configuration, which answers preflights itself (a browser cannot sign a preflight, so an
   * `AWS_IAM` URL needs it). With `apiGateway`, the API answers the preflights. The bucket gets a
   * CORS rule for them too (`POST`): a direct upload (over 4 MiB) posts its form to the bucket.
   *
   * Cost: none; every origin listed can make its visitors' browsers run agents with whatever
   * credentials those pages hold.
   * @default no browser access: no CORS headers, and a browser request from another origin is refused
   */
  readonly corsOrigins?: readonly string[];
  /**
   * Serve the chat page from the http function at `/` (with `/chat.js`, `/chat.css`,
   * `/chat-config.json`), its files bundled into the function's asset: a deployment with users
   * (`auth`) gets a page that signs in without a host of its own. `true` for the defaults, or the
   * page's options: `signIn: {url}` (e.g. the Cognito hosted UI's authorize URL with
   * `response_type=token`, redirecting back to the page), `instanceClaim` (the token claim naming the
   * instance it opens; the `auth` `ownerClaim` when there is one), `title`, `placeholder`.
   * Sets `HARNESS_CHAT_PAGE` on the http function.
   * @default false
   */
  readonly chatPage?: boolean | HarnessChatPage;
  /**
   * Put an API Gateway REST API (response streaming) in front of the http function, for its
   * authorizers and throttling. The function URL is then not created, so the API is the only
   * way in and clients keep one base URL. Every media type is a binary media type there, so request
   * bodies reach the function as sent (an attachment's bytes included). Access logs are opt-in (`accessLogs`: they need the
   * account's API Gateway CloudWatch role, ADR 0044).
   * @default false
   */
  readonly apiGateway?: boolean | HarnessApiGatewayOptions;

  /**
   * Rate of the sweep schedule: the sweeper (re-ring stale heads, reclaim expired leases,
   * finalize, expire waits, settle past durability timeouts) and the dlq function's drain of the
   * dead-letter queue both run on it.
   * @default Duration.minutes(1)
   */
  readonly sweeperRate?: Duration;
  /** @default Duration.minutes(1) */
  readonly sweeperTimeout?: Duration;

  /**
   * EventBridge Scheduler schedules that dispatch a `scheduled_tick` signal to an agent instance
   * at each firing, with the dispatch id `schedule:<name>:<scheduled time>` (retries and
   * duplicate deliveries of one firing replay one submission). With any, the construct adds a
   * small `schedule` function (names only, no agents bundled) and the role Scheduler invokes it
   * with.
   *
   * Cost: Scheduler bills $1.00 per million invocations after 14 million free a month; each
   * firing is one short Lambda invocation plus the run it admits.
   * @default no schedules
   */
  readonly schedules?: readonly HarnessSchedule[];
  /** @default Duration.minutes(1) */
  readonly dlqHandlerTimeout?: Duration;

  /**
   * Let the worker call Amazon Bedrock (`InvokeModel`, `InvokeModelWithResponseStream`).
   * @default false
   */
  readonly bedrock?: boolean | HarnessBedrockOptions;

  /**
   * Create the alarms: dead-letter queue depth and arrivals, worker errors. They cost $0.10 each
   * a month, notified or not, which would be most of an idle deployment's bill: so by default they
   * exist only when `alarmTopic` can tell someone.
   * @default true when `alarmTopic` is given, else false
   */
  readonly alarms?: boolean;
  /**
   * Also alarm on worker throttles.
   * @default false
   */
  readonly workerThrottleAlarm?: boolean;
  /**
   * Topic notified when an alarm fires or recovers (subscribe e-mail, chat or paging to it).
   *
   * Giving a topic turns the alarms on (see `alarms`). Cost: $0.10 per alarm a month (three, four
   * with `workerThrottleAlarm`); SNS notifications cost next to nothing at alarm rates (e-mail:
   * the first 1,000 a month free).
   * @default no topic, and no alarms unless `alarms` is true
   */
  readonly alarmTopic?: ITopic;

  /** @default "resolute-harness" */
  readonly serviceName?: string;
  /** @default "INFO" */
  readonly logLevel?: HarnessLogLevel;
  /**
   * How long the functions' (and the API's) log groups keep their lines.
   *
   * Cost: ingestion ($0.50 per GB) is paid whatever the retention; storage ($0.03 per GB-month)
   * grows with it. An idle deployment logs almost nothing (the sweeper logs only when it acts).
   * @default RetentionDays.ONE_MONTH
   */
  readonly logRetention?: RetentionDays;
  /**
   * Extra environment variables for every function: **non-secret settings only** (model ids,
   * `HARNESS_*` tuning knobs). Environment variables are plaintext in the synthesized template
   * and in `GetFunctionConfiguration`: pass provider keys and the bearer token with `secrets`.
   * The harness's own variables (see `HARNESS_ENV`) win on a clash. Lambda refuses a function
   * whose variables exceed 4 KB as compact JSON, the harness's own included; synth refuses it
   * first (`HarnessPropsInvalid`).
   */
  readonly environment?: Record<string, string>;
  /**
   * Secrets by reference, by the environment variable name they are read as
   * (`ANTHROPIC_API_KEY`, `HARNESS_BEARER_TOKEN`, …): a Secrets Manager secret (optionally one
   * field of its JSON) or an SSM SecureString parameter. The functions' configuration holds only
   * the reference (`HARNESS_SECRETS`); each function reads its secrets at cold start, once per
   * container, and only the roles of the functions that receive a secret may read it. By default a
   * secret goes to the functions that run agents (worker, dlq), and `HARNESS_BEARER_TOKEN` to the
   * http function alone.
   *
   * Cost: Secrets Manager bills $0.40 per secret a month and $0.05 per 10,000 reads; SSM standard
   * SecureString parameters are free (standard throughput). One read per secret per cold start.
   * @default no secrets
   */
  readonly secrets?: Readonly<Record<string, HarnessSecret>>;
  /**
   * Put the callback route (`POST /callbacks/:callbackId`, which third parties call to answer a
   * deferred tool's callback) behind a bearer token of its own: they get that token, never the
   * API's credentials, and it opens no other route. With `apiGateway` the API opens this one
   * route without its authorization (the app checks the token; every other route keeps the API's
   * auth); with `urlAuthType: NONE` the app checks the token there and `HARNESS_BEARER_TOKEN`
   * everywhere else. Refused with an `AWS_IAM` function URL, which only signed requests pass.
   *
   * Cost: that of the secret (see `secrets`), read once per cold start of the http function.
   * @default `/callbacks/*` has the same auth as every route
   */
  readonly callbacks?: HarnessCallbacksOptions;

  /**
   * X-Ray (Powertools Tracer) and OpenTelemetry tracing of the functions.
   * @default no tracing
   */
  readonly tracing?: HarnessTracingOptions;
}

/** The chat page's options (`chatPage`), as `mountChatPage` takes them. */
export interface HarnessChatPage {
  /** The page's heading and tab title. */
  readonly title?: string;
  /** The message box's placeholder. */
  readonly placeholder?: string;
  /** Where a person signs in: the page links there when the API answers 401 (an http(s) URL). */
  readonly signIn?: { readonly url: string };
  /** The token claim whose value is the instance the page opens for a signed-in person. @default "sub" */
  readonly instanceClaim?: string;
}
