/**
 * vitest globalSetup of the `aws` project: starts the local AWS emulators once for the run and
 * hands their endpoints to the test workers (`inject("awsEnv")`, applied to `process.env` by
 * `aws-env.ts`). vitest runs a project's globalSetup only when the run includes files of that
 * project, so runs without AWS tests never start Java.
 */
import type { TestProject } from "vitest/node";
import { type EmulatorEnv, startEmulators } from "./emulators.ts";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const emulators = await startEmulators();
  Object.assign(process.env, emulators.env);
  project.provide("awsEnv", emulators.env);
  process.stdout.write(`[aws] DynamoDB Local + fauxqs ready in ${emulators.startupMs} ms\n`);
  return () => emulators.stop();
}

declare module "vitest" {
  export interface ProvidedContext {
    /** Endpoints, region and dummy credentials of the local AWS emulators (aws project only). */
    awsEnv: EmulatorEnv;
  }
}
