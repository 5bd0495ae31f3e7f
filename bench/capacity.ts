/**
 * `npm run bench -- capacity`: the capacity model (`capacity-model.ts`, docs/design/capacity.md)
 * run at 1k, 10k and 100k concurrent sessions with 0, 1 and 5 viewers each, under the default
 * quotas and then under the quotas the deploy guide says to request. Its per-turn costs are this
 * run's figures where another bench measured them in the same process (`npm run bench -- aws
 * lambda capacity`), the recorded ones otherwise; it prints which.
 */
import { costInputs } from "./measured.ts";
import { DEFAULT_QUOTAS, simulate, type Quotas, type TurnCosts, type Workload } from "./capacity-model.ts";

/** The turn the cost bench prices: a user message answered with one tool call and ~2 KB of text, the model working 10 s of which 5 s streaming. */
const TURN = { modelSeconds: 10, streamingSeconds: 5 };
/** Mean think time between a reply and the next message. */
const THINK_SECONDS = 30;

/** The default quotas once the event source has scaled (its +300/min ramp is reported apart). */
const STEADY: Quotas = { ...DEFAULT_QUOTAS, eventSourceRampPerMinute: 0 };

/** Quotas to request for 10k concurrent sessions with a viewer each (docs/guide/deploy-to-aws.md). */
export const RAISED_FOR_10K: Quotas = {
  ...STEADY,
  accountConcurrency: 10_000,
  workerReserved: 3_000,
  eventSourceMax: 3_000,
};

export function turnCosts(): { costs: TurnCosts; fromThisRun: string[] } {
  const { inputs, fromThisRun } = costInputs();
  return {
    costs: {
      admissionSeconds: inputs.admissionSeconds,
      workerHarnessSeconds: inputs.workerHarnessSeconds,
      writeUnitsPerTurn: inputs.submissionWriteUnits + inputs.deltaWriteUnitsPaced,
      deltaWriteUnitsPerTurn: inputs.deltaWriteUnitsPaced,
      readUnitsPerTurn: inputs.submissionReadUnits,
      viewerReadUnitsPerSecond: inputs.viewerReadUnitsPerSecondStreaming,
      sqsRequestsPerTurn: inputs.sqsRequestsPerSubmission,
    },
    fromThisRun,
  };
}

function row(label: string, w: Workload, costs: TurnCosts, quotas: Quotas): string {
  const r = simulate(w, costs, quotas, { seconds: 120, warmupSeconds: 120 });
  const f = (x: number, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : "—");
  return [
    label.padEnd(14),
    `${f(r.turnsPerSecond, 1)} turns/s`.padStart(16),
    `queue p50 ${f(r.queueP50, 2)} s p99 ${f(r.queueP99, 1)} s`.padEnd(30),
    `workers ${r.peakWorkers}`.padEnd(14),
    `http ${r.peakHttp}`.padEnd(11),
    `throttled/s adm ${f(r.throttledAdmissions, 1)} stream ${f(r.throttledStreams, 1)} worker ${f(r.throttledWorkerStarts, 1)}`.padEnd(48),
    `WCU/s ${f(r.peakWriteUnits)} RCU/s ${f(r.peakReadUnits)}`.padEnd(28),
    `first: ${r.ceilings[0] ?? "none"}`,
  ].join(" ");
}

export async function benchCapacity(): Promise<void> {
  const { costs, fromThisRun } = turnCosts();
  console.log(
    `capacity model: think ${THINK_SECONDS} s, model ${TURN.modelSeconds} s (${TURN.streamingSeconds} s streaming); per turn ${costs.writeUnitsPerTurn.toFixed(1)} WU, ${costs.readUnitsPerTurn.toFixed(1)} RU, ` +
      `${costs.sqsRequestsPerTurn} SQS requests, admission ${costs.admissionSeconds} s, worker +${costs.workerHarnessSeconds} s; viewer ${costs.viewerReadUnitsPerSecond} RU/s`,
  );
  console.log(`  per-turn figures from this run: ${fromThisRun.length > 0 ? fromThisRun.join(", ") : "none (the recorded ones: run with aws lambda to measure them)"}`);
  for (const [name, quotas] of [
    ["default quotas, steady state", STEADY],
    ["raised for 10k (account 10,000; worker reserved 3,000; event source 3,000)", RAISED_FOR_10K],
  ] as const) {
    console.log(`\n  ${name}`);
    for (const sessions of [1_000, 10_000, 100_000]) {
      for (const viewers of [0, 1, 5]) {
        const w: Workload = { sessions, viewersPerSession: viewers, thinkSeconds: THINK_SECONDS, ...TURN };
        console.log(`  ${row(`${sessions / 1000}k × ${viewers}v`, w, costs, quotas)}`);
      }
    }
  }
}
