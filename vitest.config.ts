import { configDefaults, defineConfig } from "vitest/config";

/**
 * Test files that talk to local AWS (DynamoDB Local + fauxqs SQS/S3). They run in the `aws`
 * project, whose globalSetup starts the emulators only when the run includes one of them.
 */
const awsTests = [
  "test/stores/dynamodb*.test.ts",
  "test/queues/sqs*.test.ts",
  "test/lambdas/**/*.test.ts",
  "test/**/*.aws.test.ts",
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Vitest's default is one worker fewer than the cores: one on the 2-core machines here and in
    // CI, so the suite ran file by file (648 s). Most files wait on emulators, child processes
    // and timers, so two workers share two cores well (416 s on the same clean clone).
    maxWorkers: 2,
    reporters: ["default", "./test/support/summary-reporter.ts"],
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["test/**/*.test.ts", "src/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...awsTests],
        },
      },
      {
        extends: true,
        test: {
          name: "aws",
          include: awsTests,
          globalSetup: ["./test/support/aws-global-setup.ts"],
          setupFiles: ["./test/support/aws-env.ts"],
        },
      },
    ],
  },
});
