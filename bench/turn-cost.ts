/**
 * `npm run bench -- cost`: the whole bill of the serverless shape per 1,000 turns, for three
 * workloads, split by where the money goes, beside the same workload on Amazon Bedrock
 * AgentCore Runtime (active-CPU billing) as the anchor. A calculation from list prices
 * (`prices.ts`) and measured inputs (`measured.ts`: the figures of this run's `aws`, `lambda` and
 * `memory` benches where they ran, else the recorded ones), with every assumption printed.
 *
 * A turn: a user message answered with one tool call and ~2 KB of text. The model works
 * `modelSeconds` on it (10 s): thinking, the tool, and `streamingSeconds` (5 s, ~100 tokens/s) of
 * text streaming to whoever watches. Workloads:
 * - API only: `POST ?wait=true`, the http function held until the outcome;
 * - one SSE viewer: `POST` (202), and one stream held for the turn;
 * - a parent with three subagents: the parent's turn spawns three children (each a turn of its
 *   own, in parallel), waits, then answers; one viewer follows the parent throughout.
 */
import { DEFAULT_MEMORY_MB } from "../src/cdk/memory-sizes.ts";
import { RUNTIME_DEFAULTS } from "../src/runtime/defaults.ts";
import { costInputs, type Measured } from "./measured.ts";
import { AGENTCORE, PRICE_NOTE, PRICES } from "./prices.ts";
import { note } from "./report.ts";

/** The workload's shape (not measured: what a chat product's turn looks like). */
export const TURN = {
  /** Seconds the model works per turn (thinking, the tool, the reply). */
  modelSeconds: 10,
  /** Of which the reply's text streams (~2 KB at ~100 tokens/s). */
  streamingSeconds: 5,
  /** A subagent family: the parent's first call (spawns), each child's turn, the parent's answer (streams). */
  parentFirstSeconds: 3,
  parentAnswerSeconds: 5,
  children: 3,
  /** The `?wait=true` poll of the submission row (runtime.wait): one strongly consistent read each. */
  waitPollSeconds: 0.25,
  /** Turns a month the idle cost is spread over. */
  turnsPerMonth: 30_000,
  /** AgentCore's session idle timeout: its default, and its minimum (memory is billed until the session ends). */
  agentCoreIdleSeconds: [900, 60] as const,
};

/** Dollars per 1,000 turns by part. */
export interface Bill {
  worker: number;
  http: number;
  dynamoWrites: number;
  dynamoReads: number;
  sqs: number;
  s3: number;
  sweeper: number;
  idle: number;
}

const gbOf = (mb: number) => mb / 1024;
const lambda = (seconds: number, mb: number, requests: number) =>
  seconds * gbOf(mb) * PRICES.lambdaArmGbSecond + (requests * PRICES.lambdaRequestMillion) / 1e6;
const total = (b: Bill) => Object.values(b).reduce((s, v) => s + v, 0);

interface Work {
  /** Worker invocations and their model seconds. */
  invocations: number[];
  /** Seconds the http function is held (the POST, a wait, a stream), and its requests. */
  httpSeconds: number;
  httpRequests: number;
  /** Of the held stream: seconds text streams, seconds caught up (0 without a viewer). */
  streaming: number;
  caughtUp: number;
  /** `?wait=true`: seconds polled. */
  waited: number;
  /** Durable children of the turn's submission (each a submission of its own). */
  children: number;
  /** Seconds of model streaming (delta appends). */
  streamedSeconds: number;
}

/** The three workloads, per turn. */
function workloads(m: Measured): Record<string, Work> {
  const harness = m.workerHarnessSeconds;
  const turn = TURN.modelSeconds + harness;
  const family = TURN.parentFirstSeconds + TURN.modelSeconds + TURN.parentAnswerSeconds + 3 * harness;
  return {
    "API only (?wait=true)": {
      invocations: [TURN.modelSeconds],
      httpSeconds: m.admissionSeconds + turn,
      httpRequests: 1,
      streaming: 0,
      caughtUp: 0,
      waited: turn,
      children: 0,
      streamedSeconds: TURN.streamingSeconds,
    },
    "one SSE viewer": {
      invocations: [TURN.modelSeconds],
      httpSeconds: m.admissionSeconds + turn,
      httpRequests: 2,
      streaming: TURN.streamingSeconds,
      caughtUp: turn - TURN.streamingSeconds,
      waited: 0,
      children: 0,
      streamedSeconds: TURN.streamingSeconds,
    },
    [`parent + ${TURN.children} subagents, one viewer`]: {
      invocations: [TURN.parentFirstSeconds, TURN.parentAnswerSeconds, ...Array<number>(TURN.children).fill(TURN.modelSeconds)],
      httpSeconds: m.admissionSeconds + family,
      httpRequests: 2,
      streaming: TURN.parentAnswerSeconds,
      caughtUp: family - TURN.parentAnswerSeconds,
      waited: 0,
      children: TURN.children,
      streamedSeconds: TURN.parentAnswerSeconds + TURN.children * TURN.streamingSeconds,
    },
  };
}

/** The bill of one workload per 1,000 turns. */
export function bill(work: Work, m: Measured, memory: { worker: number; http: number } = DEFAULT_MEMORY_MB): Bill {
  const k = 1_000;
  const workerSeconds = work.invocations.reduce((s, t) => s + t + m.workerHarnessSeconds, 0);
  // Heartbeats while the model works: a lease renewal (1 write unit) and a visibility change
  // (1 SQS request) every third of the lease.
  const beats = workerSeconds / (RUNTIME_DEFAULTS.leaseMs / 3 / 1000);
  // Delta appends at the paced rate beyond what the unpaced submission figure already holds.
  const pacedExtra = ((m.deltaWriteUnitsPaced - m.deltaWriteUnitsUnpaced) / TURN.streamingSeconds) * work.streamedSeconds;
  // The turn's submission, and what each durable child adds (its own submission, spawn, park, wake, resume).
  const writes = m.submissionWriteUnits + work.children * m.childWriteUnits + pacedExtra + beats;
  const reads =
    m.submissionReadUnits +
    work.children * m.childReadUnits +
    work.streaming * m.viewerReadUnitsPerSecondStreaming +
    work.caughtUp * m.viewerReadUnitsPerSecondCaughtUp +
    work.waited / TURN.waitPollSeconds;
  const sqs = work.invocations.length * m.sqsRequestsPerSubmission + beats;
  // A running submission is seen by the sweeps that run meanwhile: half a unit each (its state item, peeked).
  const sweeperReads = (workerSeconds / 60) * 0.5;
  return {
    worker: k * lambda(workerSeconds, memory.worker, work.invocations.length),
    http: k * lambda(work.httpSeconds, memory.http, work.httpRequests),
    dynamoWrites: (k * writes * PRICES.dynamoWriteMillion) / 1e6,
    dynamoReads: (k * reads * PRICES.dynamoReadMillion) / 1e6,
    sqs: (k * sqs * PRICES.sqsFifoMillion) / 1e6,
    s3: (k * (1 + work.children) * m.s3RequestsPerSubmission * PRICES.s3PutThousand) / 1e3,
    sweeper: (k * sweeperReads * PRICES.dynamoReadMillion) / 1e6,
    idle: (k * m.idlePerMonth) / TURN.turnsPerMonth,
  };
}

/**
 * The same workload on AgentCore Runtime per 1,000 turns: the agent process in a microVM per
 * session, billed for the CPU it uses (the worker's measured CPU time per submission) and for
 * its memory (the worker's peak resident size, at least 128 MB) from the session's start to its
 * end, idle timeout included, one turn per session.
 */
export function agentCore(work: Work, m: Measured, idleSeconds: number): number {
  const cpuSeconds = ((1 + work.children) * m.workerCpuMsPerSubmission) / 1000;
  const gb = Math.max(128, m.workerPeakRssMiB) / 1024;
  const sessionSeconds = work.invocations.reduce((s, t) => Math.max(s, t), 0) + (work.children > 0 ? TURN.parentFirstSeconds + TURN.parentAnswerSeconds : 0) + idleSeconds;
  return 1_000 * ((cpuSeconds / 3600) * AGENTCORE.vcpuHour + ((gb * sessionSeconds) / 3600) * AGENTCORE.gbHour);
}

export async function benchTurnCost(): Promise<void> {
  const { inputs: m, fromThisRun } = costInputs();
  console.log(
    `the whole bill per 1,000 turns (a turn: a user message answered with one tool call and ~2 KB of text, the model working ` +
      `${TURN.modelSeconds} s of which ${TURN.streamingSeconds} s streaming); functions at the construct's defaults (worker ` +
      `${DEFAULT_MEMORY_MB.worker} MB, http ${DEFAULT_MEMORY_MB.http} MB, arm64); ${PRICE_NOTE}:`,
  );
  const cols = ["worker", "http", "DDB writes", "DDB reads", "SQS", "S3", "sweeper", "idle"];
  note(`  ${"workload".padEnd(34)} ${cols.map((c) => c.padStart(11)).join("")} ${"total".padStart(9)}  ${TURN.agentCoreIdleSeconds.map((s) => `AgentCore, ${s / 60} min idle`.padStart(24)).join("")}`);
  for (const [name, work] of Object.entries(workloads(m))) {
    const b = bill(work, m);
    const cells = [b.worker, b.http, b.dynamoWrites, b.dynamoReads, b.sqs, b.s3, b.sweeper, b.idle].map((v) => `$${v.toFixed(4)}`.padStart(11)).join("");
    const anchors = TURN.agentCoreIdleSeconds.map((s) => `$${agentCore(work, m, s).toFixed(4)}`.padStart(24)).join("");
    note(`  ${name.padEnd(34)} ${cells} ${`$${total(b).toFixed(4)}`.padStart(9)}  ${anchors}`);
  }
  note(
    `  inputs: DynamoDB ${m.submissionWriteUnits} WU / ${m.submissionReadUnits} RU per submission (+${(m.deltaWriteUnitsPaced - m.deltaWriteUnitsUnpaced).toFixed(1)} WU ` +
      `of delta flushes per ${TURN.streamingSeconds} s streamed), a durable child +${m.childWriteUnits} WU / +${m.childReadUnits} RU; a viewer's ` +
      `stream ${m.viewerReadUnitsPerSecondStreaming} RU/s streaming, ${m.viewerReadUnitsPerSecondCaughtUp} RU/s caught up; ?wait=true one read per ` +
      `${TURN.waitPollSeconds * 1000} ms; a POST's admission ${(m.admissionSeconds * 1000).toFixed(0)} ms; worker +${(m.workerHarnessSeconds * 1000).toFixed(0)} ms ` +
      `per invocation beyond the model, ${m.workerCpuMsPerSubmission.toFixed(0)} ms CPU per submission, ${m.workerPeakRssMiB.toFixed(0)} MiB peak; ` +
      `${m.sqsRequestsPerSubmission} SQS requests per submission + a visibility change per heartbeat; ${m.s3RequestsPerSubmission} S3 requests; ` +
      `idle $${m.idlePerMonth.toFixed(2)}/month over ${TURN.turnsPerMonth.toLocaleString("en-US")} turns a month`,
  );
  note(
    `  measured in this run: ${fromThisRun.length > 0 ? fromThisRun.join(", ") : "none (run with aws, lambda and memory for this run's figures)"}; ` +
      `the rest as recorded in docs/performance.md`,
  );
  note(
    `  AgentCore Runtime: $${AGENTCORE.vcpuHour}/vCPU-hour for CPU used, $${AGENTCORE.gbHour}/GB-hour for memory (≥ 128 MB) from the ` +
      `session's start to its end (the idle timeout included), one turn per session; the same agent process (the worker's CPU and ` +
      `memory), no durability store, streaming in its own response (${AGENTCORE.source})`,
  );
}
