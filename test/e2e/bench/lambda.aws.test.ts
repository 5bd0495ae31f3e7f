/**
 * `npm run bench -- lambda`, short (issue 28): it bundles the construct's functions, measures the
 * http function's cold start beside the hello-world floor, streams two replies through the http
 * function of one local cloud (the embedded shape and the cloud without proxies are the long
 * run's), meters the reads of an open stream, and prints each figure with its target. Timings
 * are printed, never asserted; what is asserted is that the figures exist and the things that
 * are not timings hold (no provider SDK in the http function, a caught-up poll reads at most one
 * unit).
 */
import { describe, expect, it } from "vitest";
import { benchLambda } from "../../../bench/lambda.ts";
import { figureOf, printed } from "./printed.ts";

describe("bench lambda (short)", () => {
  it("prints a cold start beside the floor, first token and delta latency, and reads per stream", async () => {
    const output = await printed(() =>
      benchLambda({
        coldStarts: 1,
        coldStartRoles: ["http"],
        embedded: false,
        oneCloud: true,
        workers: 1,
        runs: 2,
        warmRuns: 0,
        countedRuns: 1,
        caughtUpMs: 2_500,
        streamingDeltas: 40,
        profile: false,
        runningEmulators: true,
      }),
    );
    for (const name of [/hello-world bundle init/, /http init/]) expect(figureOf(output, name)).toBeGreaterThan(0);
    expect(output).toMatch(/http init: [\d.]+ ms {2}target ≤ 150 ms/);
    // Beside it, its CPU time and the same bundle under --enable-source-maps (ADR 0037).
    expect(output).toMatch(/CPU \d+ ms; -?\d+ ms over the floor; with --enable-source-maps \d+ ms \(CPU \d+ ms\)/);
    expect(output).toContain("http: provider SDKs in the asset: none");
    expect(output).toContain("worker: provider SDKs in the asset: yes");
    expect(figureOf(output, /POST → first text delta, local cloud, p50/)).toBeGreaterThan(0);
    expect(output).toMatch(/delta record written \(worker\) → SSE client, p50 of \d+: [\d.]+ ms {2}target ≤ 60 ms/);
    expect(output).toMatch(/SQS requests per submission [\d.]+/);
    // Not a timing: what a caught-up stream reads per poll (a strongly consistent page of the log).
    expect(figureOf(output, /read units per caught-up poll/)).toBeLessThanOrEqual(1);
    expect(figureOf(output, /read units per second while a run streams/)).toBeGreaterThan(0);
  }, 600_000);
});
