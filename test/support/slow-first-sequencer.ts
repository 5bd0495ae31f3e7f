import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The files that take longest, started first. Without vitest's cache of durations (a clean clone,
 * as in CI) its sequencer starts larger files first, and a short file that waits minutes (the
 * runbooks: 34 lines, ~3 minutes) came last and ran alone at the end of the suite.
 */
const SLOW_FIRST = [
  "test/e2e/package/deploy-your-own-agents.test.ts",
  "test/e2e/runbooks.test.ts",
  "test/e2e/examples/chat.test.ts",
  "test/unit/cdk/harness.test.ts",
  "test/scenarios/crash-matrix-local-cloud.aws.test.ts",
];

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const at = SLOW_FIRST.indexOf(relative(spec.project.config.root, spec.moduleId));
      return at < 0 ? SLOW_FIRST.length : at;
    };
    // Array.prototype.sort is stable: the rest keep the base order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
