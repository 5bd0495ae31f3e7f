/**
 * The result-schema engine's memory (issue 24's review): ajv keeps everything it compiled for
 * its instance's life (`removeSchema` frees none of its patterns, formats and code), so one
 * instance grew without bound under distinct schemas. The engine drops the whole instance once
 * the schema bytes compiled into it pass the budget. The bench reports the figures
 * (bench/hostile-schemas.ts); this test only tells bounded from unbounded.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { expect, it } from "vitest";
import { ResultSchemaEngine } from "../../../src/drive/result-schema-engine.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** Heap in use after a full collection, in MiB. */
function heapMiB(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

/** A schema of 20 distinct patterns (~900 bytes): each pattern is a compiled RE2 program ajv keeps. */
function patterned(k: number): unknown {
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < 20; i++) properties[`p${i}`] = { type: "string", pattern: `^x${k}_${i}$` };
  return { type: "object", properties };
}

it("distinct schemas do not pile up: the ajv instance is replaced, whole, once its budget is spent", () => {
  const engine = new ResultSchemaEngine({ cacheBytes: 16 * 1024 });
  const before = heapMiB();
  for (let k = 0; k < 150; k++) expect(engine.problem(patterned(k))).toBeUndefined();
  const grown = heapMiB() - before;
  expect(engine.generations).toBeGreaterThan(5);
  expect(engine.cachedBytes).toBeLessThanOrEqual(16 * 1024);
  // One instance for all of them kept ~25 MiB (ajv's scope holds every pattern); bounded, at most
  // one budget's worth (~3 MiB) is left.
  expect(grown).toBeLessThan(10);
  // The cache still answers from the current instance.
  expect(engine.check('{"p0":"x149_0"}', patterned(149))).toEqual({ ok: true, value: { p0: "x149_0" } });
});
