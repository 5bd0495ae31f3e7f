/**
 * The measured inputs of the cost benchmark (`turn-cost.ts`), with the figures of the run
 * documented in docs/performance.md as defaults. A bench that measures one of them sets it here,
 * so `npm run bench` prices the figures of its own run; `npm run bench -- cost` alone prices the
 * recorded ones (it says which).
 */
export interface Measured {
  /** DynamoDB units of a submission answered with one tool call and ~2 KB of text, worker side, admission to settlement (bench aws). */
  submissionWriteUnits: number;
  submissionReadUnits: number;
  /** Write units of that submission's reply text: unpaced (1 KB flushes) and streamed at ~400 B/s (a 200 ms flush each), per assistant turn (bench aws). */
  deltaWriteUnitsUnpaced: number;
  deltaWriteUnitsPaced: number;
  /** Units a durable child adds over the same work done by an in-process tool: spawn, park, child run and settlement, wake, resume (bench aws). */
  childWriteUnits: number;
  childReadUnits: number;
  /** Read units per sweep of a table with nothing to do, and the idle deployment's monthly cost (bench aws). */
  sweepReadUnits: number;
  idlePerMonth: number;
  /** The http function's read units per second for one open SSE stream: while a run streams, and caught up (bench lambda). */
  viewerReadUnitsPerSecondStreaming: number;
  viewerReadUnitsPerSecondCaughtUp: number;
  /** The http function's busy time of a POST that admits (to its 202), seconds (bench lambda). */
  admissionSeconds: number;
  /** Worker invocation time per submission beyond the model's (claim, rebuild, appends, settlement), seconds (bench lambda). */
  workerHarnessSeconds: number;
  /** Worker CPU time per submission (harness + agent loop + the model stream's events), ms (bench lambda). */
  workerCpuMsPerSubmission: number;
  /** SQS requests per submission, excluding the event source's empty polls (bench lambda). */
  sqsRequestsPerSubmission: number;
  /** S3 requests per submission (bench lambda). */
  s3RequestsPerSubmission: number;
  /** The worker's resident size at its peak through the memory mix, MiB (bench memory). */
  workerPeakRssMiB: number;
}

/** The run documented in docs/performance.md (replaced field by field by the benches of this run). */
export const RECORDED: Measured = {
  submissionWriteUnits: 29.8,
  submissionReadUnits: 23.7,
  deltaWriteUnitsUnpaced: 4.6,
  deltaWriteUnitsPaced: 25.0,
  childWriteUnits: 53,
  childReadUnits: 28,
  sweepReadUnits: 6,
  idlePerMonth: 0.44,
  viewerReadUnitsPerSecondStreaming: 7.0,
  viewerReadUnitsPerSecondCaughtUp: 1.1,
  admissionSeconds: 0.05,
  workerHarnessSeconds: 0.3,
  workerCpuMsPerSubmission: 60,
  sqsRequestsPerSubmission: 4,
  s3RequestsPerSubmission: 0,
  workerPeakRssMiB: 190,
};

/** Figures measured by this process's benches so far. */
export const measured: Partial<Measured> = {};

/** The inputs to price: this run's figures where measured, the recorded ones elsewhere; and which were measured. */
export function costInputs(): { inputs: Measured; fromThisRun: (keyof Measured)[] } {
  return { inputs: { ...RECORDED, ...measured }, fromThisRun: Object.keys(measured) as (keyof Measured)[] };
}
