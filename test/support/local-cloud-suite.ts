import { afterAll, beforeAll, onTestFailed } from "vitest";
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
 * Starts a local cloud before the file's tests (the options may be computed then, e.g. from a
 * scripted provider started first) and stops it after them.
 */
export function useLocalCloud(options: Omit<LocalCloudOptions, "log" | "onError"> | (() => Omit<LocalCloudOptions, "log" | "onError">)): LocalCloudSuite {
  const logs: string[] = [];
  let cloud: LocalCloud | undefined;
  let store: Store | undefined;
  beforeAll(async () => {
    cloud = await startLocalCloud({
      ...(typeof options === "function" ? options() : options),
      log: (line, source) => logs.push(`[${source}] ${line}`),
      onError: (err, source) => logs.push(`[event-source ${source}] ${String(err)}`),
    });
    store = createDynamoStore({ tableName: cloud.tableName, bucketName: cloud.bucketName });
  }, 180_000);
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
