import { Duration, RemovalPolicy } from "aws-cdk-lib";
import { Architecture, Runtime } from "aws-cdk-lib/aws-lambda";
import { NodejsFunction, OutputFormat } from "aws-cdk-lib/aws-lambda-nodejs";
import { Role, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import { LogGroup, type RetentionDays } from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import { AGENTS_ALIAS } from "./env.ts";

/** What one harness Lambda function needs beyond the shared bundling settings. */
export interface HarnessFunctionProps {
  /** Absolute path of the handler module (`lambdas/<role>.ts`). */
  entry: string;
  /** Name of the exported handler. */
  handler?: string;
  /** Absolute path of the module exporting `agents`, bound to the `#harness-agents` alias. */
  agentsEntry: string;
  /** Directory holding `package-lock.json`; every entry must lie under it. */
  projectRoot: string;
  timeout: Duration;
  memorySize: number;
  environment: Record<string, string>;
  logRetention: RetentionDays;
  removalPolicy: RemovalPolicy;
  reservedConcurrentExecutions?: number;
  /** Retries of an asynchronous invocation (only the sweeper is invoked asynchronously). */
  retryAttempts?: number;
}

/**
 * A Node 22 / arm64 / ESM function bundled by esbuild, with its own role and log group.
 *
 * The role starts empty except for writing to the function's own log group (no
 * `AWSLambdaBasicExecutionRole`, whose `logs:CreateLogGroup` on `*` is more than a function with a
 * pre-created log group needs); the `Harness` construct adds exactly the data grants each role
 * uses.
 */
export class HarnessFunction extends Construct {
  readonly function: NodejsFunction;
  readonly role: Role;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: HarnessFunctionProps) {
    super(scope, id);
    this.logGroup = new LogGroup(this, "Logs", {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    this.role = new Role(this, "Role", {
      assumedBy: new ServicePrincipal("lambda.amazonaws.com"),
      description: `Execution role of the harness ${id} function`,
    });
    this.logGroup.grantWrite(this.role);

    this.function = new NodejsFunction(this, "Function", {
      entry: props.entry,
      handler: props.handler ?? "handler",
      projectRoot: props.projectRoot,
      depsLockFilePath: `${props.projectRoot}/package-lock.json`,
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      timeout: props.timeout,
      memorySize: props.memorySize,
      role: this.role,
      logGroup: this.logGroup,
      reservedConcurrentExecutions: props.reservedConcurrentExecutions,
      retryAttempts: props.retryAttempts,
      environment: { NODE_OPTIONS: "--enable-source-maps", ...props.environment },
      bundling: {
        format: OutputFormat.ESM,
        target: "node22",
        minify: true,
        sourceMap: true,
        sourcesContent: false,
        mainFields: ["module", "main"],
        // Bundle the AWS SDK too: the function runs the exact SDK version the tests ran, not
        // whichever one the managed runtime ships this month.
        externalModules: [],
        // CommonJS dependencies inside an ESM bundle may `require` Node built-ins.
        banner: "import{createRequire as __harnessRequire}from'node:module';const require=__harnessRequire(import.meta.url);",
        // Handlers import the user's agents as `#harness-agents`; one bundle per deployment.
        esbuildArgs: { [`--alias:${AGENTS_ALIAS}`]: props.agentsEntry },
      },
    });
  }
}
