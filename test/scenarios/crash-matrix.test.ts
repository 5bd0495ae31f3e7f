/**
 * The crash matrix, embedded shape: for every phase of the fault seam, a runtime over a SQLite
 * file stops dead at that phase (its work hangs there and the runtime is abandoned, writing
 * nothing more: what a killed process leaves), then a fresh runtime over the same file (a second
 * connection, as a restarted process opens it) recovers. See `test/support/crash-matrix.ts` for
 * the expectations; the serverless twin kills real worker processes on the local cloud.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SUBMISSION_FAULT_PHASES, type FaultPhase } from "../../src/ports/faults.ts";
import { ManualClock } from "../../src/ports/clock.ts";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import { clockTool } from "../../src/agent/clock-tool.ts";
import { localModel } from "../../src/agent/local-model.ts";
import { openSqliteStore, type SqliteStore } from "../../src/sqlite/index.ts";
import { CRASH_MATRIX, CRASHED_MESSAGE, crashCaseViolations, NEXT_MESSAGE } from "../support/crash-matrix.ts";
import { settleTicks } from "../support/runtime-kit.ts";

const LEASE_MS = 30_000;
const dir = mkdtempSync(join(tmpdir(), "crash-matrix-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const agents = {
  assistant: {
    initialize: () => ({ ...localModel(), tools: [clockTool()] }),
  },
};

function runtimeOver(store: SqliteStore, clock: ManualClock, faults?: (phase: FaultPhase, id: string) => void | Promise<void>): Runtime {
  // Every delta durable at once (the quickstart's policy), so `mid_stream` is reached.
  return createRuntime({ agents, store, clock, leaseMs: LEASE_MS, flushPolicy: { bytes: 0, intervalMs: 0 }, sweepIntervalMs: 5_000, faults });
}

describe("crash matrix (embedded: the runtime dropped at each phase, a new one over the same SQLite file)", () => {
  it("covers every phase of the fault seam", () => {
    expect(Object.keys(CRASH_MATRIX).sort()).toEqual([...SUBMISSION_FAULT_PHASES].sort());
  });

  it.each([...SUBMISSION_FAULT_PHASES])("%s: A settles once with its attempts counted, nothing lost or duplicated, B runs after it", async (phase) => {
    const path = join(dir, `${phase}.db`);
    const clock = new ManualClock();
    const first = openSqliteStore({ path, clock });
    const aId = `cm-${phase}-a`;
    let reached!: () => void;
    const atPhase = new Promise<void>((r) => (reached = r));
    const crashed = runtimeOver(first, clock, (p, id) => {
      if (p !== phase || id !== aId) return;
      reached();
      return new Promise<never>(() => {}); // the process "dies" here: nothing after this point runs
    });
    const address = { agent: "assistant", instance: `cm-${phase}` };
    // A, then B behind it, before the runtime consumes work: B is queued while A runs.
    const a = crashed.dispatch({ ...address, dispatchId: aId, message: { kind: "user", body: CRASHED_MESSAGE } });
    await (phase === "admitted" ? atPhase : a); // A is durable first
    await crashed.dispatch({ ...address, dispatchId: `cm-${phase}-b`, message: { kind: "user", body: NEXT_MESSAGE } });
    if (phase !== "admitted") await crashed.start();
    await Promise.race([atPhase, settleTicks(500).then(() => Promise.reject(new Error(`phase ${phase} was never reached`)))]);
    await crashed.close({ abandon: true });
    const a0 = await first.getSubmission(aId);
    const logAtCrash = await first.readRecords(a0.conversationId);

    // A new process: its own connection to the file, its own runtime, no faults.
    const second = openSqliteStore({ path, clock });
    const recovered = runtimeOver(second, clock);
    await recovered.start();
    const waits = Promise.all([recovered.wait(aId), recovered.wait(`cm-${phase}-b`)]);
    // Past the lease and the settlement grace, then a sweep: what the dead runtime held is taken back.
    await clock.advance(LEASE_MS + 1_000);
    await clock.advance(5_000);
    await settleTicks();
    await clock.advance(5_000);
    await waits;
    await recovered.close();

    const violations = crashCaseViolations({
      phase,
      sessionKey: `assistant/cm-${phase}/default`,
      a: await second.getSubmission(aId),
      b: await second.getSubmission(`cm-${phase}-b`),
      log: await second.readRecords(a0.conversationId),
      logAtCrash,
    });
    await second.close();
    await first.close();
    expect(violations).toEqual([]);
  });
});
