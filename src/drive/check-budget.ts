/**
 * The work one check of a reply against a result schema may do, counted in steps: a pattern match
 * costs the text's length times the pattern's size (RE2 instructions), a call of a compiled
 * validator (every `$ref`: ajv compiles referenced schemas as functions) {@link VALIDATOR_CALL_STEPS}. Size does not bound the cost
 * of a schema: 31 levels of `allOf: [{$ref: next}, {$ref: next}]` (2 KB) call the last one 2^31
 * times (32 s for the reply `1`). Past the budget, the check stops with {@link CheckTooCostly}
 * (docs/adr/0026).
 */
import { MAX_RESULT_CHECK_STEPS } from "../protocol/limits.ts";

/** A check went past its budget: the schema costs too much to check against. */
export class CheckTooCostly extends Error {
  readonly code = "result_schema_too_costly";
  constructor(steps: number, what: string) {
    super(`checking a value against the result schema takes more than ${steps} steps (${what})`);
    this.name = "CheckTooCostly";
  }
}

/** The steps left to the check running now (one check at a time: the engine is synchronous). */
export class CheckBudget {
  readonly #steps: number;
  #left: number;

  constructor(steps = MAX_RESULT_CHECK_STEPS) {
    this.#steps = steps;
    this.#left = steps;
  }

  /** Starts a new check with the whole budget. */
  reset(): void {
    this.#left = this.#steps;
  }

  /** Spends `steps`; throws {@link CheckTooCostly} past the budget (`what` names the spender). */
  charge(steps: number, what: string): void {
    this.#left -= steps;
    if (this.#left < 0) throw new CheckTooCostly(this.#steps, what);
  }
}

/**
 * Steps charged for one call of a compiled validator: measured side by side, a call costs about
 * as long as 150 steps of a pattern's match (4.5 µs against 28 ns on a loaded 2-core machine).
 */
export const VALIDATOR_CALL_STEPS = 150;

/** The property of the ajv instance (`self` in its generated code) holding the budget. */
export const BUDGET_PROPERTY = "harnessCheckBudget";

// The head of every validator ajv generates: `return function validate12(data, {…}={}){`.
const VALIDATOR_HEAD = /return (?:async )?function [\w$]+\(data, \{[^}]*\}=\{\}\)\{/;

/**
 * ajv's `code.process` option: makes every generated validator charge {@link VALIDATOR_CALL_STEPS} when called,
 * to the budget on its ajv instance ({@link BUDGET_PROPERTY}).
 * @throws Error when ajv's generated code no longer has the expected head (a new ajv version)
 */
export function meteredValidatorCode(source: string): string {
  const head = VALIDATOR_HEAD.exec(source);
  if (head === null) throw new Error("result-schema engine: ajv's generated validator has an unexpected head; update check-budget.ts");
  const at = head.index + head[0].length;
  return `${source.slice(0, at)}self.${BUDGET_PROPERTY}.charge(${VALIDATOR_CALL_STEPS},"calls of $ref and nested validators");${source.slice(at)}`;
}
