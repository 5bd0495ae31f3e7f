import { configDefaults, defineConfig } from "vitest/config";
import SlowFirstSequencer from "./test/support/slow-first-sequencer.ts";

/**
 * Tests that talk to local AWS (DynamoDB Local + fauxqs SQS/S3) are named `*.aws.test.ts`. They run
 * in the `aws` project, whose globalSetup starts the emulators only when the run includes one.
 * Layout: test/unit/<path of the module>.test.ts (module tests; `<module>.<aspect>.test.ts` when a
 * module has several), test/scenarios/ (crash, race, soak-style and review scenarios), test/e2e/
 * (examples, processes, the CLI, the local cloud, the browser, the package), test/support/ (shared).
 */
const awsTests = ["test/**/*.aws.test.ts"];
/**
 * `npm run rehearse` on whole CDK apps (each synthesized cold, with its bundles: over two minutes
 * on 2 cores), so `npm test` leaves it to `npm run test:rehearsal`; CI runs it (`npm run test:ci`).
 * Its own emulators, as the aws project's.
 */
const rehearsalTests = ["test/e2e/lambda/rehearse.aws.test.ts"];
/**
 * The package as a user installs it (`npm pack`, an app outside the repository, `tsc`, `cdk synth`):
 * several minutes of builds and installs, so `npm test` leaves it to `npm run test:package`; CI
 * runs both (`npm run test:ci`).
 */
const packageTests = [
  "test/e2e/package/deploy-your-own-agents.test.ts",
  "test/e2e/package/create-resolute-harness.test.ts",
  "test/e2e/package/first-hour.test.ts",
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Vitest's default is one worker fewer than the cores: one on the 2-core machines here and in
    // CI, so the suite ran file by file (648 s). Most files wait on emulators, child processes
    // and timers, so two workers share two cores well (416 s on the same clean clone).
    maxWorkers: 2,
    // A worker runs its files in one module graph instead of loading the sources again for each
    // file: test/unit 207 -> 98 CPU-s, the aws project 412 -> 351. Two tests failed that way
    // and both were right to: a replay within the same millisecond read as new (the store now
    // answers `replayed` itself), and otel spans one right after another read as overlapping
    // (the SDK's whole-millisecond start times; src/otel/span-clock.ts).
    // A test that needs module state of its own resets it (vi.resetModules) in its own file.
    isolate: false,
    reporters: ["default", "./test/support/summary-reporter.ts"],
    sequence: { sequencer: SlowFirstSequencer },
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...awsTests, ...packageTests],
        },
      },
      {
        extends: true,
        test: { name: "package", include: packageTests },
      },
      {
        extends: true,
        test: {
          name: "aws",
          include: awsTests,
          exclude: [...configDefaults.exclude, ...rehearsalTests],
          globalSetup: ["./test/support/aws-global-setup.ts"],
          setupFiles: ["./test/support/aws-env.ts"],
        },
      },
      {
        extends: true,
        test: {
          name: "rehearsal",
          include: rehearsalTests,
          globalSetup: ["./test/support/aws-global-setup.ts"],
          setupFiles: ["./test/support/aws-env.ts"],
        },
      },
    ],
  },
});
