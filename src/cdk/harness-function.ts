import { AssetHashType, DockerImage, Duration, type ILocalBundling, RemovalPolicy } from "aws-cdk-lib";
import { Architecture, type AssetCode, Code, Function as LambdaFunction, Runtime } from "aws-cdk-lib/aws-lambda";
import { Role, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import { LogGroup, type RetentionDays } from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { buildSync } from "esbuild";
import { CONSOLE_BUNDLE_DIR, CONSOLE_FILES, CONSOLE_PAGE_DIR } from "../console/mount-console.ts";
import { CHAT_PAGE_ASSET_DIR, writeChatPageAssets } from "./chat-page-asset.ts";
import { lambdaBuildOptions } from "./lambda-bundling.ts";
import type { HarnessFunctionTracing } from "./harness-tracing.ts";

/** What one asset of harness handlers is built from. */
export interface HarnessCodeProps {
  /** Absolute path of the handler module (`lambda/<role>.ts`), or several by entry name (see `LambdaBundleInput`). */
  entry: string | Readonly<Record<string, string>>;
  /** Absolute path of the module exporting `agents`, bound to the `#harness-agents` alias. */
  agentsEntry: string;
  /** Source directory of the asset (never fingerprinted: the asset hash is the bundle's). */
  projectRoot: string;
  /** Write source maps beside the bundle, and bundle the module that maps stack traces through them (`lambda/lazy-source-maps.ts`). */
  sourceMaps: boolean;
  /** What the construct's `tracing` option bundles (see `harness-tracing.ts`). */
  tracing?: HarnessFunctionTracing;
  /** Write the chat page's files into the asset too (`chat-page/`: the http function serves them). */
  chatPage?: boolean;
}

/**
 * An asset of harness handlers bundled by esbuild at synth (offline, no Docker). One asset can
 * serve several functions (each with its own `handler`, e.g. `worker.handler`): it is uploaded
 * once.
 *
 * Bundling uses esbuild's JS API with the options of `lambda-bundling.ts` (the ones the bench
 * measures) and code splitting, which `NodejsFunction` cannot do (it bundles to one `--outfile`):
 * the asset holds the entry files and the lazily loaded `chunks/`.
 */
export function harnessCode(props: HarnessCodeProps): AssetCode {
  return Code.fromAsset(props.projectRoot, {
    // Hash the bundle, not the source directory (which holds node_modules).
    assetHashType: AssetHashType.OUTPUT,
    // The image is required by the type but never used: local bundling always succeeds or throws.
    bundling: { image: DockerImage.fromRegistry("dummy"), local: new EsbuildBundling(props.entry, props.agentsEntry, props.sourceMaps, props.tracing, props.chatPage ?? false) },
  });
}

/** What one harness Lambda function needs beyond its code. */
export interface HarnessFunctionProps {
  /** The asset (`harnessCode`), possibly shared with other functions. */
  code: AssetCode;
  /** `<entry file>.<export>`, e.g. `index.handler`. */
  handler: string;
  timeout: Duration;
  memorySize: number;
  environment: Record<string, string>;
  logRetention: RetentionDays;
  removalPolicy: RemovalPolicy;
  reservedConcurrentExecutions?: number;
  /** Retries of an asynchronous invocation (only the sweeper is invoked asynchronously). */
  retryAttempts?: number;
  /** What the construct's `tracing` option sets on the function (Lambda's X-Ray mode). */
  tracing?: HarnessFunctionTracing;
}

/**
 * A Node 22 / arm64 / ESM function of a `harnessCode` asset, with its own role and log group.
 *
 * The role starts empty except for writing to the function's own log group (no
 * `AWSLambdaBasicExecutionRole`, whose `logs:CreateLogGroup` on `*` is more than a function with a
 * pre-created log group needs); the `Harness` construct adds exactly the data grants each role
 * uses.
 */
export class HarnessFunction extends Construct {
  readonly function: LambdaFunction;
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

    this.function = new LambdaFunction(this, "Function", {
      code: props.code,
      handler: props.handler,
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      timeout: props.timeout,
      memorySize: props.memorySize,
      role: this.role,
      logGroup: this.logGroup,
      reservedConcurrentExecutions: props.reservedConcurrentExecutions,
      retryAttempts: props.retryAttempts,
      tracing: props.tracing?.lambdaTracing,
      // No NODE_OPTIONS=--enable-source-maps: the bundle maps its stack traces itself, when they are formatted (ADR 0037).
      environment: props.environment,
    });
  }
}

/**
 * Local bundling through esbuild's JS API. Its fields take part in the CDK's asset cache key
 * (the serialized bundling options), so two functions with different entries never share one.
 */
class EsbuildBundling implements ILocalBundling {
  readonly entry: string | Readonly<Record<string, string>>;
  readonly agentsEntry: string;
  readonly sourceMap: boolean;
  readonly inject: readonly string[];
  readonly alias: Readonly<Record<string, string>>;
  readonly chatPage: boolean;

  constructor(entry: string | Readonly<Record<string, string>>, agentsEntry: string, sourceMap: boolean, tracing: HarnessFunctionTracing | undefined, chatPage: boolean) {
    this.entry = entry;
    this.chatPage = chatPage;
    this.agentsEntry = agentsEntry;
    this.sourceMap = sourceMap;
    this.inject = tracing?.inject ?? [];
    this.alias = tracing?.alias ?? {};
  }

  tryBundle(outputDir: string): boolean {
    buildSync(
      lambdaBuildOptions({
        entry: this.entry,
        agentsEntry: this.agentsEntry,
        outdir: outputDir,
        sourceMap: this.sourceMap,
        inject: this.inject,
        alias: this.alias,
      }),
    );
    // The console's page (ADR 0054), plain files the http function serves when it has an operator token.
    const consoleDir = join(outputDir, CONSOLE_BUNDLE_DIR);
    mkdirSync(consoleDir, { recursive: true });
    for (const file of CONSOLE_FILES) copyFileSync(join(CONSOLE_PAGE_DIR, file), join(consoleDir, file));
    if (this.chatPage) writeChatPageAssets(join(outputDir, CHAT_PAGE_ASSET_DIR));
    return true;
  }
}
