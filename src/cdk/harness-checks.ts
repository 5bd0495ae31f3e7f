import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { CfnResource, Duration, Stack, Token } from "aws-cdk-lib";
import { FunctionUrlAuthType, type CfnFunction, type Function as CdkFunction } from "aws-cdk-lib/aws-lambda";
import { resolveLimits } from "../engine/subagents.ts";
import { HARNESS_FUNCTION_ROLES } from "../lambda/env.ts";
import { checkAgentNames, discoverAgentsModule, type DiscoveredAgentsModule } from "./agent-names.ts";
import type { HarnessProps } from "./harness-props.ts";
import { AUTH_ENV } from "../auth/auth-from-env.ts";
import { audienceList } from "./harness-auth.ts";
import { MIN_DYNAMO_DELTA_RETENTION_MS } from "../conversation/delta-folding.ts";

/**
 * What the `Harness` construct checks before it creates anything: the props that Lambda or SQS
 * would refuse at deployment, and the agents module's names and limits.
 */

/**
 * A combination of props the construct refuses at synth because it would deploy and then fail, or
 * deploy something unsafe; the message names the prop, the problem and the fix.
 */
export class HarnessPropsInvalid extends Error {
  readonly code = "harness_props_invalid";
  /** The prop at fault (`urlAuthType`, `apiGateway`, `workerMaxConcurrency`, `environment`, `agentsEntry`). */
  readonly prop: string;
  constructor(prop: string, why: string) {
    super(`Harness: ${prop}: ${why}`);
    this.name = "HarnessPropsInvalid";
    this.prop = prop;
  }
}

/** How callers of the http function are authenticated, as the props configure it. */
export interface FrontDoorAuth {
  /** Who checks callers before the app: the function URL's or the API's IAM auth, an authorizer, or nobody. */
  readonly gate: "iam" | "authorizer" | "none";
  /** The app checks a bearer token (`HARNESS_BEARER_TOKEN` in `secrets`, or in `environment`). */
  readonly bearerToken: boolean;
  /** The app verifies users' JWTs (`auth`, or `AUTH_ISSUER` in `environment`). */
  readonly jwt: boolean;
}

/** The function URL's (or, with `apiGateway`, the API's default) auth type: `urlAuthType`, else `NONE` with `auth`, else `AWS_IAM`. */
export function effectiveUrlAuthType(props: HarnessProps): FunctionUrlAuthType {
  return props.urlAuthType ?? (props.auth ? FunctionUrlAuthType.NONE : FunctionUrlAuthType.AWS_IAM);
}

/** The front door's authentication (see {@link checkFrontDoor}). */
export function frontDoorAuth(props: HarnessProps): FrontDoorAuth {
  const urlAuthType = effectiveUrlAuthType(props);
  const authorizer = (typeof props.apiGateway === "object" && props.apiGateway.authorizer !== undefined) || props.auth?.cognito !== undefined;
  return {
    gate: props.apiGateway && authorizer ? "authorizer" : urlAuthType === FunctionUrlAuthType.AWS_IAM ? "iam" : "none",
    bearerToken: props.secrets?.HARNESS_BEARER_TOKEN !== undefined || props.environment?.HARNESS_BEARER_TOKEN !== undefined,
    jwt: props.auth !== undefined || (props.environment?.AUTH_ISSUER ?? "").trim() !== "",
  };
}

/**
 * Refuses a front door nobody guards: `urlAuthType: NONE` (function URL, or the API without an
 * authorizer) and neither a bearer token nor users' JWTs (`auth`) for the app to check. Behind a
 * function URL the http function then refuses to start (every cold start fails, `callbacks` or
 * not); behind the API it would serve every route to anyone, since the API authorizes nothing
 * either. An open door on purpose says so with `HARNESS_ALLOW_UNAUTHENTICATED: "true"` in
 * `environment`.
 * @throws HarnessPropsInvalid naming the fix
 */
export function checkFrontDoor(props: HarnessProps): void {
  const auth = frontDoorAuth(props);
  if (auth.gate !== "none" || auth.bearerToken || auth.jwt || props.environment?.HARNESS_ALLOW_UNAUTHENTICATED === "true") return;
  const onPurpose = 'or, to serve unauthenticated on purpose, set HARNESS_ALLOW_UNAUTHENTICATED: "true" in `environment`';
  if (props.apiGateway) {
    throw new HarnessPropsInvalid(
      "apiGateway",
      "with urlAuthType NONE and no apiGateway.authorizer the API authorizes no route and no HARNESS_BEARER_TOKEN or `auth` is given: anyone could run your agents. " +
        `Give \`auth\` (users' JWTs, verified by the app), pass the token in \`secrets\` (HARNESS_BEARER_TOKEN: the app checks it on every route), give apiGateway.authorizer, or keep urlAuthType AWS_IAM (IAM authorization); ${onPurpose}`,
    );
  }
  throw new HarnessPropsInvalid(
    "urlAuthType",
    `NONE with no HARNESS_BEARER_TOKEN and no \`auth\`: the http function refuses to serve an open function URL, so every cold start would fail${props.callbacks ? " (callbacks.bearerToken opens only the callback route: the other routes need HARNESS_BEARER_TOKEN or `auth`)" : ""}. ` +
      `Give \`auth\` (users' JWTs), pass the token in \`secrets\` (HARNESS_BEARER_TOKEN), or keep urlAuthType AWS_IAM; ${onPurpose}`,
  );
}

/**
 * Refuses a worker concurrency Lambda would throttle: the event source starting more invocations
 * than the reservation lets run turns each surplus delivery into a throttle, which counts as a
 * receive and walks doorbells toward the dead-letter queue (`maxReceiveCount`).
 * @throws HarnessPropsInvalid
 */
export function checkWorkerConcurrency(props: HarnessProps): void {
  const max = props.workerMaxConcurrency;
  const reserved = props.workerReservedConcurrency;
  if (max !== undefined && (!Number.isInteger(max) || max < 2 || max > 1000)) {
    throw new HarnessPropsInvalid("workerMaxConcurrency", `${max} is not an integer from 2 to 1000 (what the SQS event source takes)`);
  }
  if (reserved !== undefined && (!Number.isInteger(reserved) || reserved < 0)) {
    throw new HarnessPropsInvalid("workerReservedConcurrency", `${reserved} is not a whole number`);
  }
  if (max !== undefined && reserved !== undefined && max > reserved) {
    throw new HarnessPropsInvalid(
      "workerMaxConcurrency",
      `${max} is above workerReservedConcurrency (${reserved}): the event source would start invocations Lambda throttles, and each throttle counts as a receive toward the dead-letter queue. Set workerMaxConcurrency at most ${reserved}, or raise the reservation`,
    );
  }
}

/** Lambda's limit on a function's environment: its variables as compact JSON, in bytes (4 KB). */
export const LAMBDA_ENVIRONMENT_MAX_BYTES = 4096;

/**
 * The size Lambda measures for a function's environment — `{"NAME":"value",…}` as compact JSON,
 * the string its refusal quotes — at least: values known at synth count exactly, a value only
 * deployment knows (a table name, a queue URL, an ARN) at the shortest it can be. So an
 * environment counted over {@link LAMBDA_ENVIRONMENT_MAX_BYTES} is refused for certain on deploy.
 */
export function lambdaEnvironmentBytes(fn: CdkFunction): number {
  const stack = Stack.of(fn);
  const cfn = fn.node.defaultChild as CfnFunction;
  const resolved = stack.resolve(cfn.environment) as { variables?: Record<string, unknown>; Variables?: Record<string, unknown> } | undefined;
  const variables = resolved?.variables ?? resolved?.Variables ?? {};
  const typeOf = new Map<string, string>();
  for (const child of stack.node.findAll()) {
    if (CfnResource.isCfnResource(child)) typeOf.set(stack.resolve(child.logicalId) as string, child.cfnResourceType);
  }
  const shortest = (node: unknown): string => {
    if (typeof node === "string") return node;
    if (typeof node === "number" || typeof node === "boolean") return String(node);
    const o = (node ?? {}) as Record<string, unknown>;
    if (Array.isArray(o["Fn::Join"])) {
      const [separator, parts] = o["Fn::Join"] as [string, unknown[]];
      return parts.map(shortest).join(separator);
    }
    if (typeof o.Ref === "string") return SHORTEST_REF[o.Ref] ?? SHORTEST_REF[typeOf.get(o.Ref) ?? ""] ?? "";
    // Fn::GetAtt, Fn::Select, Fn::ImportValue, …: nothing assumed.
    return "";
  };
  const measured = Object.fromEntries(Object.entries(variables).map(([name, value]) => [name, shortest(value)]));
  return Buffer.byteLength(JSON.stringify(measured), "utf8");
}

/** The shortest value a `Ref` resolves to, by pseudo parameter or resource type (what this construct's environment references). */
const SHORTEST_REF: Readonly<Record<string, string>> = {
  "AWS::AccountId": "000000000000",
  "AWS::Region": "us-east-1",
  "AWS::Partition": "aws",
  "AWS::URLSuffix": "amazonaws.com",
  // A queue's Ref is its URL: https://sqs.<region>.<suffix>/<account>/<name>, a FIFO name ending in .fifo.
  "AWS::SQS::Queue": "https://sqs.us-east-1.amazonaws.com/000000000000/q.fifo",
  // A secret's Ref is its ARN, the name followed by a dash and six random characters.
  "AWS::SecretsManager::Secret": "arn:aws:secretsmanager:us-east-1:000000000000:secret:s-000000",
};

/**
 * Refuses a function whose environment Lambda would refuse (see {@link lambdaEnvironmentBytes}).
 * @throws HarnessPropsInvalid naming the function and its largest variables
 */
export function checkEnvironmentSize(role: string, fn: CdkFunction): void {
  const problem = environmentSizeProblem(role, fn);
  if (problem) throw new HarnessPropsInvalid("environment", problem);
}

/** The message of {@link checkEnvironmentSize}, or undefined when the environment fits. */
export function environmentSizeProblem(role: string, fn: CdkFunction): string | undefined {
  const bytes = lambdaEnvironmentBytes(fn);
  if (bytes <= LAMBDA_ENVIRONMENT_MAX_BYTES) return undefined;
  return (
    `the ${role} function's environment is at least ${bytes} bytes as Lambda measures it (the variables as compact JSON), over its limit of ${LAMBDA_ENVIRONMENT_MAX_BYTES}: ` +
    "deployment would fail. Keep large settings out of `environment` (read them from S3 or SSM in your agents module), or pass fewer secrets to this function"
  );
}

/** The given agent names and subagent limits (checked), or those discovered from the agents module. */
export function agentsModuleOf(props: HarnessProps, agentsEntry: string): DiscoveredAgentsModule {
  const discovered = props.agentNames === undefined ? discoverAgentsModule(agentsEntry) : undefined;
  const given = (what: string, check: () => void) => {
    try {
      check();
    } catch (err) {
      throw new Error(`Harness: ${what}: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  if (discovered?.stdioMcpServers !== undefined) {
    throw new HarnessPropsInvalid(
      "agentsEntry",
      `the agents module declares a stdio MCP server (${discovered.stdioMcpServers.join("; ")}): a Lambda function keeps no process beside the worker, and mcpTools refuses it there (mcp_stdio_on_lambda). Serve it over streamable HTTP and give mcpTools its url`,
    );
  }
  const known: DiscoveredAgentsModule = discovered ?? { names: [] };
  if (props.agentNames !== undefined) given("agentNames", () => (known.names = checkAgentNames(props.agentNames!)));
  if (props.subagentLimits !== undefined) given("subagentLimits", () => (known.subagentLimits = resolveLimits(props.subagentLimits)));
  return known;
}

export function validate(
  props: HarnessProps,
  d: { workerTimeout: Duration; streamMax: Duration; httpTimeout: Duration; visibility: Duration; maxReceiveCount: number },
): void {
  const fifteenMinutes = Duration.minutes(15).toSeconds();
  if (d.workerTimeout.toSeconds() > fifteenMinutes) throw new Error("Harness: workerTimeout exceeds Lambda's 15 minutes");
  if (d.httpTimeout.toSeconds() > fifteenMinutes) throw new Error("Harness: httpTimeout exceeds Lambda's 15 minutes");
  if (d.visibility.toSeconds() < d.workerTimeout.toSeconds()) {
    throw new Error("Harness: queueVisibilityTimeout must be at least workerTimeout (Lambda rejects the event source otherwise)");
  }
  if (d.streamMax.toSeconds() + 10 > d.httpTimeout.toSeconds()) {
    throw new Error("Harness: streamMaxDuration must end at least 10 s before httpTimeout");
  }
  if (props.conversationRetention && props.conversationRetention.toMilliseconds() < 3_600_000) {
    throw new Error("Harness: conversationRetention must be at least an hour");
  }
  if (props.deltaRetention && props.deltaRetention.toMilliseconds() < MIN_DYNAMO_DELTA_RETENTION_MS) {
    throw new Error("Harness: deltaRetention must be at least 15 minutes (live readers must get a turn's deltas first)");
  }
  for (const origin of props.corsOrigins ?? []) {
    if (origin !== "*" && !/^https?:\/\/[^/\s,]+$/.test(origin)) {
      throw new Error(`Harness: corsOrigins: ${JSON.stringify(origin)} is not an origin (scheme://host[:port], no path) or "*"`);
    }
  }
  if (!Number.isInteger(d.maxReceiveCount) || d.maxReceiveCount < 1 || d.maxReceiveCount > 1000) {
    throw new Error("Harness: maxReceiveCount must be an integer from 1 to 1000");
  }
  const handlers = props.handlerEntries ?? {};
  for (const role of HARNESS_FUNCTION_ROLES) {
    const given = handlers[role];
    if (given !== undefined && !existsSync(resolve(given))) throw new Error(`Harness: handler entry for ${role} not found: ${given}`);
  }
}

/**
 * Refuses an `auth` that cannot work or contradicts the other props: neither or both of `jwt`
 * and `cognito`; an `AWS_IAM` front door (a browser holding a user's token cannot sign); an issuer
 * or key set URL that is not `https`; an empty audience; the `AUTH_*` variables also given in
 * `environment`; a Cognito authorizer beside `apiGateway.authorizer`. Values that are tokens
 * (known only at deployment) are not inspected.
 * @throws HarnessPropsInvalid naming the fix
 */
export function checkAuth(props: HarnessProps): void {
  const auth = props.auth;
  if (auth === undefined) return;
  if ((auth.jwt === undefined) === (auth.cognito === undefined)) {
    throw new HarnessPropsInvalid("auth", "give exactly one of `jwt` (any OIDC issuer) and `cognito` (a user pool)");
  }
  if (props.urlAuthType === FunctionUrlAuthType.AWS_IAM) {
    throw new HarnessPropsInvalid(
      "auth",
      `with urlAuthType AWS_IAM only SigV4-signed requests would pass ${props.apiGateway ? "the API" : "the function URL"}, and a browser holding a user's token cannot sign: ` +
        "leave urlAuthType unset (with `auth` it is NONE and the app verifies the tokens)",
    );
  }
  const given = Object.values(AUTH_ENV).filter((name) => name !== AUTH_ENV.bearerToken && props.environment?.[name] !== undefined);
  if (given.length > 0) {
    throw new HarnessPropsInvalid("auth", `${given.join(", ")} given in \`environment\` too: keep \`auth\` (it sets them on the http function) and remove them from \`environment\``);
  }
  const ownerClaim = auth.jwt?.ownerClaim ?? auth.cognito?.ownerClaim;
  if (ownerClaim !== undefined && !Token.isUnresolved(ownerClaim) && (ownerClaim.trim() === "" || ownerClaim !== ownerClaim.trim())) {
    throw new HarnessPropsInvalid("auth", `ownerClaim ${JSON.stringify(ownerClaim)} is not a claim name (leave it unset for "sub")`);
  }
  if (auth.jwt) {
    checkHttpsUrl("auth.jwt.issuer", auth.jwt.issuer);
    if (auth.jwt.jwksUrl !== undefined) checkHttpsUrl("auth.jwt.jwksUrl", auth.jwt.jwksUrl);
    checkAudiences("auth.jwt.audience", audienceList(auth.jwt.audience));
  } else {
    const cognito = auth.cognito!;
    checkAudiences(
      "auth.cognito.clients",
      cognito.clients.map((c) => (typeof c === "string" ? c : c.userPoolClientId)),
    );
    if (cognito.scopes !== undefined) {
      if (!props.apiGateway) throw new HarnessPropsInvalid("auth", "cognito.scopes are required by the API Gateway authorizer: they need `apiGateway` (a function URL has no authorizer)");
      if (cognito.scopes.length === 0 || cognito.scopes.some((s) => !Token.isUnresolved(s) && (s.trim() === "" || /\s/.test(s)))) {
        throw new HarnessPropsInvalid("auth", "cognito.scopes must name at least one scope, each without spaces (e.g. `harness/agents`), or be left unset");
      }
    }
    if (props.apiGateway && typeof props.apiGateway === "object" && props.apiGateway.authorizer !== undefined) {
      throw new HarnessPropsInvalid(
        "auth",
        "auth.cognito puts a Cognito user pools authorizer on the API and apiGateway.authorizer gives another: a method takes one. Drop apiGateway.authorizer, or use auth.jwt with your own authorizer",
      );
    }
  }
}

function checkHttpsUrl(prop: string, value: string): void {
  if (Token.isUnresolved(value)) return;
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (url === undefined || value.trim() !== value) throw new HarnessPropsInvalid(prop, `${JSON.stringify(value)} is not a URL`);
  if (url.protocol !== "https:") {
    // Not even on loopback: the function's own loopback runs no issuer, and over plain HTTP
    // anyone on the path could serve keys of their own and sign any token.
    throw new HarnessPropsInvalid(prop, `${JSON.stringify(value)} is not https: the http function fetches the issuer's keys from it, and keys fetched over plain HTTP could be anyone's`);
  }
}

function checkAudiences(prop: string, audiences: readonly string[]): void {
  if (audiences.length === 0) throw new HarnessPropsInvalid(prop, "no audience: name at least one (your app client id) that tokens must carry");
  for (const audience of audiences) {
    if (Token.isUnresolved(audience)) continue;
    if (audience.trim() === "" || audience.includes(",")) {
      throw new HarnessPropsInvalid(prop, `${JSON.stringify(audience)} is not an audience (blank, or a comma the function would split it at)`);
    }
  }
}
