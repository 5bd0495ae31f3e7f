import { afterAll, afterEach, beforeAll, onTestFailed } from "vitest";
import { assemblyWithout, type GrantRemoval } from "../../dev/local-cloud/assembly-mutation.ts";
import { exampleAssembly } from "../../dev/local-cloud/cloud-assembly.ts";
import { startLocalCloud, type LocalCloud, type LocalCloudOptions } from "../../dev/local-cloud/local-cloud.ts";
import type { Store } from "../../src/store/store.ts";
import { createDynamoStore } from "../../src/dynamodb/index.ts";

/** One local cloud for a test file, with a DynamoDB store on its table and its output kept. */
export interface LocalCloudSuite {
  readonly cloud: LocalCloud;
  readonly store: Store;
  /** Every line the functions and event sources wrote, tagged with their source. */
  readonly logs: string[];
  /** Prints the last lines of the local cloud's output when the current test fails. */
  dumpLogsOnFailure(lines?: number): void;
}

/**
 * What a test file's local cloud is made of: the example app (`examples/basic/cdk-app.ts`)
 * synthesized over `agentsModule` (with further `context`), brought up with IAM enforced, and the
 * local cloud's test knobs.
 */
export type LocalCloudSuiteOptions = Omit<LocalCloudOptions, "log" | "onError" | "assembly"> & {
  /** The agents module the example app deploys (`harness:agentsEntry`). */
  agentsModule: string;
  /** Further context of the app (`-c key=value`). */
  context?: Record<string, string>;
  /** Take a grant away from the synthesized roles (as if the construct never gave it). */
  without?: GrantRemoval;
  /**
   * An AccessDenied in a function fails the test it happened in (naming the function, action and
   * resource), unless the file expects them.
   */
  expectDenials?: boolean;
};

/**
 * Starts a local cloud before the file's tests (the options may be computed then, e.g. from a
 * scripted provider started first) and stops it after them. The synthesized assembly is cached
 * across files and runs (`cachedAssembly`): one synth per agents module and source tree.
 */
export function useLocalCloud(options: LocalCloudSuiteOptions | (() => LocalCloudSuiteOptions)): LocalCloudSuite {
  const logs: string[] = [];
  let cloud: LocalCloud | undefined;
  let store: Store | undefined;
  beforeAll(async () => {
    const { agentsModule, context, without, expectDenials, ...rest } = typeof options === "function" ? options() : options;
    denialsFail = !expectDenials;
    const assembly = exampleAssembly(agentsModule, context);
    logs.push(`[synth] ${assembly.cached ? "cached" : "synthesized"} ${assembly.dir} in ${Math.round(assembly.ms)} ms`);
    cloud = await startLocalCloud({
      ...rest,
      assembly: without ? assemblyWithout(assembly.dir, without) : assembly.dir,
      log: (line, source) => logs.push(`[${source}] ${line}`),
      onError: (err, source) => logs.push(`[event-source ${source}] ${String(err)}`),
    });
    store = createDynamoStore({ tableName: cloud.tableName, bucketName: cloud.bucketName });
  }, 900_000); // a cold synthesis on a busy machine takes minutes (cached afterwards)
  let denialsFail = true;
  let denialsSeen = 0;
  afterEach(() => {
    const denials = cloud?.iam?.denials ?? [];
    const fresh = denials.slice(denialsSeen);
    denialsSeen = denials.length;
    if (denialsFail && fresh.length > 0) {
      throw new Error(`AccessDenied in the local cloud: ${fresh.map((d) => `${d.function} may not ${d.action} on ${d.resource}`).join("; ")}`);
    }
  });
  afterAll(async () => {
    await cloud?.stop();
  });
  return {
    get cloud() {
      if (!cloud) throw new Error("the local cloud is not started yet (use it inside a test or hook)");
      return cloud;
    },
    get store() {
      if (!store) throw new Error("the local cloud is not started yet (use it inside a test or hook)");
      return store;
    },
    logs,
    dumpLogsOnFailure(lines = 100) {
      onTestFailed(() => {
        process.stderr.write(`--- local cloud output (last ${lines} lines) ---\n${logs.slice(-lines).join("\n")}\n`);
      });
    },
  };
}
