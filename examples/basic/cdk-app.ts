/**
 * The CDK app that deploys the basic example (`examples/basic/agents.ts`) serverless.
 * Run it through the CLI from the repository root: `npx cdk synth` / `npx cdk deploy`
 * (`cdk.json` starts this file with Node 22's type stripping).
 *
 * Context switches (`-c key=value`):
 * - `harness:stackName` (default `ResoluteHarnessBasic`)
 * - `harness:agentsEntry=path/to/agents.ts`  deploy other agents (default the basic example's)
 * - `harness:agentNames=a,b`  the agents' names for the http and sweeper functions (default:
 *   discovered by importing the agents module in a child Node process)
 * - `harness:destroy=true`   table, bucket and logs are deleted with the stack (default: retained)
 * - `harness:bedrock=true`   the worker may invoke Bedrock models
 * - `harness:apiGateway=true` a REST API (streaming) instead of the function URL
 * - `harness:urlAuth=NONE`   function URL without IAM auth (the app must check tokens itself)
 * - `harness:auth:issuer=https://…` and `harness:auth:audience=<client id>[,<client id>]`: users
 *   sign in with that OIDC issuer and the http function verifies their JWTs (the construct's
 *   `auth.jwt`; the URL is then `authType: NONE`); `harness:auth:jwksUrl`, `harness:auth:ownerClaim`
 *   optional. Or `harness:auth:userPoolArn=arn:aws:cognito-idp:…` with `harness:auth:audience=<app
 *   client ids>` (`auth.cognito`: the issuer is the pool's, and with `harness:apiGateway=true` a
 *   Cognito authorizer checks the ID token first). See docs/guide/deploy-to-aws.md#users-who-sign-in.
 * - `harness:chatPage=true`  the http function serves the chat page at `/` (the construct's `chatPage`)
 * - `harness:schedules=<JSON array>`  the construct's `schedules` (`[{"name", "expression", "agent",
 *   "instance", "body"}]`): EventBridge Scheduler dispatches each to the agent
 * - `harness:model=provider/model`  sets `MODEL` on the functions (the basic example's model
 *   switch; unset = its keyless model). With Bedrock no key is needed: the worker's role signs.
 * - `harness:secret:NAME=ssm:/parameter/name` or `harness:secret:NAME=sm:<secret ARN>[#field]`
 *   hands the functions a secret by reference as the construct's `secrets` prop does (e.g.
 *   `-c harness:secret:ANTHROPIC_API_KEY=ssm:/harness/anthropic-key` for the worker and dlq,
 *   `-c harness:secret:HARNESS_BEARER_TOKEN=ssm:/harness/token` for the http function with
 *   `harness:urlAuth=NONE`). Never pass a key through `environment`: it would be plaintext in the
 *   template.
 *
 * The AwsSolutions cdk-nag pack runs on every synth; an unacknowledged finding fails it.
 */
import { fileURLToPath } from "node:url";
import { App, CfnOutput, RemovalPolicy, Stack, Validations } from "aws-cdk-lib";
import { UserPool } from "aws-cdk-lib/aws-cognito";
import { FunctionUrlAuthType } from "aws-cdk-lib/aws-lambda";
import { Secret } from "aws-cdk-lib/aws-secretsmanager";
import nag from "cdk-nag";
import { Harness, type HarnessAuthOptions, type HarnessSecret } from "../../src/cdk/harness.ts";
import type { HarnessSchedule } from "../../src/cdk/harness-schedules.ts";

const app = new App();
const flag = (key: string): boolean => String(app.node.tryGetContext(key)) === "true";

const account = process.env.CDK_DEFAULT_ACCOUNT;
const region = process.env.CDK_DEFAULT_REGION;
const stack = new Stack(app, String(app.node.tryGetContext("harness:stackName") ?? "ResoluteHarnessBasic"), {
  // Environment-agnostic unless the CLI knows the target (no lookups are used either way).
  env: account && region ? { account, region } : undefined,
  description: "resolute-harness: the basic example, serverless (Lambda, DynamoDB, SQS FIFO, S3)",
});

const model = app.node.tryGetContext("harness:model");

// `harness:secret:NAME` context keys: references, resolved by the functions at cold start.
const secrets: Record<string, HarnessSecret> = {};
for (const [key, value] of Object.entries(app.node.getAllContext())) {
  if (!key.startsWith("harness:secret:")) continue;
  const name = key.slice("harness:secret:".length);
  const where = String(value);
  if (where.startsWith("ssm:")) {
    secrets[name] = { parameterName: where.slice(4) };
  } else if (where.startsWith("sm:")) {
    const [arn, field] = where.slice(3).split("#");
    secrets[name] = { secret: Secret.fromSecretCompleteArn(stack, `Secret${name}`, arn!), field };
  } else {
    throw new Error(`${key}: expected ssm:<parameter name> or sm:<secret ARN>[#field], got ${where}`);
  }
}

// `harness:auth:*` context keys: who signs in (the construct refuses what makes no sense).
const context = (key: string): string | undefined => {
  const value = app.node.tryGetContext(`harness:auth:${key}`);
  return value === undefined ? undefined : String(value);
};
const audience = (context("audience") ?? "").split(",").map((a) => a.trim()).filter(Boolean);
const userPoolArn = context("userPoolArn");
const issuer = context("issuer");
if (userPoolArn !== undefined && issuer !== undefined) {
  throw new Error("harness:auth:issuer and harness:auth:userPoolArn: give one (a user pool's issuer is derived from its ARN)");
}
const auth: HarnessAuthOptions | undefined =
  userPoolArn !== undefined
    ? {
        cognito: {
          userPool: UserPool.fromUserPoolArn(stack, "UserPool", userPoolArn),
          clients: audience,
          ...(context("ownerClaim") ? { ownerClaim: context("ownerClaim") } : {}),
        },
      }
    : issuer !== undefined
      ? {
          jwt: {
            issuer,
            audience,
            ...(context("jwksUrl") ? { jwksUrl: context("jwksUrl") } : {}),
            ...(context("ownerClaim") ? { ownerClaim: context("ownerClaim") } : {}),
          },
        }
      : undefined;
const urlAuth = app.node.tryGetContext("harness:urlAuth");

const harness = new Harness(stack, "Harness", {
  agentsEntry: app.node.tryGetContext("harness:agentsEntry")
    ? String(app.node.tryGetContext("harness:agentsEntry"))
    : fileURLToPath(new URL("./agents.ts", import.meta.url)),
  agentNames: app.node.tryGetContext("harness:agentNames")
    ? String(app.node.tryGetContext("harness:agentNames")).split(",").map((n) => n.trim())
    : undefined,
  removalPolicy: flag("harness:destroy") ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
  bedrock: flag("harness:bedrock"),
  apiGateway: flag("harness:apiGateway"),
  // Unset: the construct's default (AWS_IAM, or NONE with `auth`).
  urlAuthType: urlAuth === undefined ? undefined : String(urlAuth) === "NONE" ? FunctionUrlAuthType.NONE : FunctionUrlAuthType.AWS_IAM,
  auth,
  environment: model ? { MODEL: String(model) } : undefined,
  secrets,
  chatPage: flag("harness:chatPage"),
  schedules: app.node.tryGetContext("harness:schedules") ? (JSON.parse(String(app.node.tryGetContext("harness:schedules"))) as HarnessSchedule[]) : undefined,
});

new CfnOutput(stack, "Url", { value: harness.url, description: "Base URL of the harness HTTP API" });
new CfnOutput(stack, "TableName", { value: harness.table.tableName });
new CfnOutput(stack, "BucketName", { value: harness.bucket.bucketName });
new CfnOutput(stack, "QueueUrl", { value: harness.queue.queueUrl });

Validations.of(app).addPlugins(new nag.AwsSolutionsChecks(app));
