/**
 * setupFile of the `aws` project: points every SDK client in the worker at the emulators the
 * globalSetup started (`AWS_ENDPOINT_URL_*`, region, dummy credentials).
 */
import { inject } from "vitest";

Object.assign(process.env, inject("awsEnv"));
