/**
 * `npm run bench -- cost` (issue 28): the whole bill per 1,000 turns for the three workloads, each
 * split by where the money goes, beside AgentCore Runtime, priced at the construct's default
 * memory sizes. A calculation: asserted are its shape and the relations that make it honest
 * (a viewer costs http-function time the API-only turn does not spend streaming; the memory a
 * function is given scales its share).
 */
import { describe, expect, it } from "vitest";
import { bill, benchTurnCost } from "../../../bench/turn-cost.ts";
import { RECORDED } from "../../../bench/measured.ts";
import { DEFAULT_MEMORY_MB } from "../../../src/cdk/memory-sizes.ts";
import { printed } from "./printed.ts";

const dollars = (cell: string) => Number(cell.replace("$", ""));

describe("bench cost", () => {
  it("prints the three workloads split by part, with totals and the AgentCore anchors", async () => {
    const output = await printed(() => benchTurnCost());
    expect(output).toContain(`worker ${DEFAULT_MEMORY_MB.worker} MB, http ${DEFAULT_MEMORY_MB.http} MB`);
    const rows = output.split("\n").filter((l) => /^\s+(API only|one SSE viewer|parent \+ 3 subagents)/.test(l));
    expect(rows).toHaveLength(3);
    for (const row of rows) {
      const cells = row.match(/\$[\d.]+/g)!.map(dollars);
      // worker, http, DDB writes, DDB reads, SQS, S3, sweeper, idle, total, AgentCore × 2
      expect(cells, row).toHaveLength(11);
      const parts = cells.slice(0, 8).reduce((s, v) => s + v, 0);
      expect(Math.abs(parts - cells[8]!), row).toBeLessThan(0.0006);
      expect(cells[0], row).toBeGreaterThan(0);
    }
    expect(output).toMatch(/measured in this run: /);
  });

  it("a function's share scales with the memory it is given", () => {
    const work = { invocations: [10], httpSeconds: 10.4, httpRequests: 2, streaming: 5, caughtUp: 5.4, waited: 0, children: 0, streamedSeconds: 5 };
    const at256 = bill(work, RECORDED, { ...DEFAULT_MEMORY_MB, worker: 256, http: 256 });
    const at1024 = bill(work, RECORDED, { ...DEFAULT_MEMORY_MB, worker: 1024, http: 512 });
    // Requests cost the same; duration 4× (worker) and 2× (http).
    expect(at1024.worker / at256.worker).toBeGreaterThan(3.5);
    expect(at1024.http / at256.http).toBeGreaterThan(1.8);
    expect(at1024.dynamoReads).toBe(at256.dynamoReads);
  });
});
