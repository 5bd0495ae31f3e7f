/**
 * The capacity simulation (`npm run bench -- capacity`, docs/design/capacity.md): a discrete-event
 * model of a serverless deployment under many concurrent sessions, driven by the per-turn costs
 * the other benches measure (`measured.ts`) and by the AWS quotas below. It answers which ceiling
 * a workload meets first, and how much queueing and throttling it causes there.
 *
 * What it models, per session: think, then a turn — the http function admits it (an execution for
 * `admissionSeconds`), the doorbell goes through SQS, the event source starts a worker (bounded by
 * the event source's scaling and the account's concurrency), the worker runs the model for
 * `modelSeconds` plus the harness's own `workerHarnessSeconds`; each viewer holds an http
 * execution for the turn (an SSE stream lives while the session's run is live). A throttled
 * admission or stream is retried by its client after a backoff; a throttled worker start leaves
 * the doorbell to the sweep's re-ring (ADR 0028: within `sweepRetrySeconds`). DynamoDB and SQS are
 * metered per second against their table, partition and API-action quotas (not throttled in the
 * model: the figures say where they would be).
 */
import { seededRandom } from "../src/store/conformance/random-log.ts";

/** Per-turn costs, from `measured.ts` (this run's figures where measured, the recorded ones elsewhere). */
export interface TurnCosts {
  admissionSeconds: number;
  workerHarnessSeconds: number;
  /** DynamoDB write / read units of one turn (worker and admission; deltas included). */
  writeUnitsPerTurn: number;
  /** The part of `writeUnitsPerTurn` that is the reply's delta flushes (written while it streams, to one partition). */
  deltaWriteUnitsPerTurn: number;
  readUnitsPerTurn: number;
  /** A viewer's read units per second while the run streams. */
  viewerReadUnitsPerSecond: number;
  sqsRequestsPerTurn: number;
}

/** The workload: how sessions behave. */
export interface Workload {
  sessions: number;
  viewersPerSession: number;
  /** Mean think time between a turn's end and the next message, seconds (exponential). */
  thinkSeconds: number;
  /** The model's time per turn, seconds (the run's wall time beyond the harness). */
  modelSeconds: number;
  /** The seconds of the turn spent streaming (delta writes and viewer polls happen then). */
  streamingSeconds: number;
}

/** The account's quotas and the construct's settings that bound it. */
export interface Quotas {
  /** Lambda concurrent executions, account and region (`L-B99A9384`, default 1,000). */
  accountConcurrency: number;
  /** The worker's reserved concurrency (0: none; it shares the unreserved pool). */
  workerReserved: number;
  /** The http function's reserved concurrency (0: none). */
  httpReserved: number;
  /** Concurrent batches the SQS event source reaches in standard mode (1,000 per mapping). */
  eventSourceMax: number;
  /** How fast the event source adds concurrent batches, per minute (300 for SQS); 0: already scaled (steady state). */
  eventSourceRampPerMinute: number;
  /** Executions a function adds per 10 s (Lambda's scaling rate: 1,000). */
  functionScalePer10s: number;
  /** DynamoDB on-demand table throughput: the per-table quota (40,000 units/s each by default). */
  tableWriteUnits: number;
  tableReadUnits: number;
  /** A new on-demand table serves this much at once (4,000 writes / 12,000 reads per second) before it adapts. */
  newTableWriteUnits: number;
  newTableReadUnits: number;
  /** One partition (one conversation's log): 1,000 WCU and 3,000 RCU per second. */
  partitionWriteUnits: number;
  partitionReadUnits: number;
  /** SQS FIFO transactions per second per API action (high-throughput mode: 70,000 in the largest regions; 300 without). */
  sqsPerAction: number;
}

export const DEFAULT_QUOTAS: Quotas = {
  accountConcurrency: 1_000,
  workerReserved: 0,
  httpReserved: 0,
  eventSourceMax: 1_000,
  eventSourceRampPerMinute: 300,
  functionScalePer10s: 1_000,
  tableWriteUnits: 40_000,
  tableReadUnits: 40_000,
  newTableWriteUnits: 4_000,
  newTableReadUnits: 12_000,
  partitionWriteUnits: 1_000,
  partitionReadUnits: 3_000,
  sqsPerAction: 70_000,
};

/** What a run of the model reports (over the measured window, after the warm-up). */
export interface CapacityReport {
  turnsPerSecond: number;
  /** The user sends → the worker starts, seconds (throttled admissions' retries included). */
  queueP50: number;
  queueP99: number;
  /** Throttled attempts per second: admissions, viewers' streams, worker starts. */
  throttledAdmissions: number;
  throttledStreams: number;
  throttledWorkerStarts: number;
  peakWorkers: number;
  peakHttp: number;
  /** Per-second peaks. */
  peakWriteUnits: number;
  peakReadUnits: number;
  peakSqsPerAction: number;
  /** One streaming session's write and read units per second (its log's partition). */
  partitionWriteUnits: number;
  partitionReadUnits: number;
  /** The ceilings met, in the order the model met them (empty: none). */
  ceilings: string[];
}

/** A tiny binary heap of timed events. */
class Agenda {
  readonly #times: number[] = [];
  readonly #items: number[] = [];
  get size(): number {
    return this.#times.length;
  }
  push(time: number, item: number): void {
    const t = this.#times;
    const it = this.#items;
    let i = t.length;
    t.push(time);
    it.push(item);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (t[p]! <= time) break;
      t[i] = t[p]!;
      it[i] = it[p]!;
      i = p;
    }
    t[i] = time;
    it[i] = item;
  }
  /** Removes the earliest; answers [time, item]. */
  pop(): [number, number] {
    const t = this.#times;
    const it = this.#items;
    const top: [number, number] = [t[0]!, it[0]!];
    const lastT = t.pop()!;
    const lastI = it.pop()!;
    if (t.length > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= t.length) break;
        const r = l + 1;
        const c = r < t.length && t[r]! < t[l]! ? r : l;
        if (t[c]! >= lastT) break;
        t[i] = t[c]!;
        it[i] = it[c]!;
        i = c;
      }
      t[i] = lastT;
      it[i] = lastI;
    }
    return top;
  }
}

// Event kinds, packed with the session index into one number: item = session * 8 + kind.
const THINK_DONE = 0; // the user sends a message: admission
const WORKER_TRY = 1; // the doorbell reaches the event source
const TURN_DONE = 2; // the worker finished the turn
const VIEWER_TRY = 3; // a viewer (re)opens its stream

/**
 * Runs the model for `warmupSeconds` + `seconds` of simulated time and reports the measured
 * window. Sessions start spread over the first think time (not all at once).
 */
export function simulate(workload: Workload, costs: TurnCosts, quotas: Quotas = DEFAULT_QUOTAS, options: { seconds?: number; warmupSeconds?: number; seed?: number } = {}): CapacityReport {
  const seconds = options.seconds ?? 300;
  const warmup = options.warmupSeconds ?? 180;
  const end = warmup + seconds;
  const rand = seededRandom(options.seed ?? 1);
  const exp = (mean: number) => -Math.log(1 - rand()) * mean;
  const n = workload.sessions;
  const agenda = new Agenda();
  const sentAt = new Float64Array(n);
  const viewersOpen = new Int32Array(n);
  const turnLive = new Uint8Array(n);
  const unreserved = quotas.accountConcurrency - quotas.workerReserved - quotas.httpReserved;
  let workers = 0;
  let http = 0;
  let pool = 0; // executions of the unreserved pool in use
  let peakWorkers = 0;
  let peakHttp = 0;
  let workerEnvsAllowed = quotas.functionScalePer10s;
  let httpEnvsAllowed = quotas.functionScalePer10s;
  const waits: number[] = [];
  let turns = 0;
  let throttledAdmissions = 0;
  let throttledStreams = 0;
  let throttledWorkerStarts = 0;
  const ceilings: string[] = [];
  let measuringNow = false;
  const ceiling = (name: string) => {
    if (measuringNow && !ceilings.includes(name)) ceilings.push(name);
  };
  // Per-second meters (deltas and polls spread over a turn's streaming seconds).
  const secondsTotal = Math.ceil(end) + Math.ceil(workload.modelSeconds) + 2;
  const writeUnits = new Float64Array(secondsTotal);
  const readUnits = new Float64Array(secondsTotal);
  const sqs = new Float64Array(secondsTotal);
  const spread = (meter: Float64Array, from: number, duration: number, total: number) => {
    const whole = Math.max(1, Math.round(duration));
    for (let s = 0; s < whole; s++) {
      const i = Math.floor(from + s);
      if (i < meter.length) meter[i] = meter[i]! + total / whole;
    }
  };

  /** Takes an execution of a function: its reservation, or the unreserved pool; false when throttled. */
  const take = (fn: "worker" | "http", now: number): boolean => {
    const reserved = fn === "worker" ? quotas.workerReserved : quotas.httpReserved;
    const inUse = fn === "worker" ? workers : http;
    // Lambda's scaling rate: a function adds `functionScalePer10s` executions per 10 s.
    const allowed = fn === "worker" ? workerEnvsAllowed : httpEnvsAllowed;
    if (inUse >= allowed) {
      ceiling(`${fn}: Lambda scaling rate (${quotas.functionScalePer10s} executions per 10 s)`);
      return false;
    }
    if (reserved > 0) {
      if (inUse >= reserved) {
        ceiling(`${fn}: its reserved concurrency (${reserved})`);
        return false;
      }
    } else {
      if (pool >= unreserved) {
        ceiling(`Lambda account concurrency (${quotas.accountConcurrency}${unreserved < quotas.accountConcurrency ? `, ${unreserved} unreserved` : ""}): ${fn} throttled`);
        return false;
      }
      pool++;
    }
    if (fn === "worker") peakWorkers = Math.max(peakWorkers, ++workers);
    else peakHttp = Math.max(peakHttp, ++http);
    void now;
    return true;
  };
  const release = (fn: "worker" | "http") => {
    const reserved = fn === "worker" ? quotas.workerReserved : quotas.httpReserved;
    if (reserved === 0) pool--;
    if (fn === "worker") workers--;
    else http--;
  };

  // http executions end at known times; kept in their own agenda (item: unused).
  const httpEnds = new Agenda();
  const releaseHttpUntil = (now: number) => {
    while (httpEnds.size > 0) {
      const [t] = httpEnds.pop();
      if (t > now) {
        httpEnds.push(t, 0);
        break;
      }
      release("http");
    }
  };

  for (let s = 0; s < n; s++) agenda.push(rand() * (workload.thinkSeconds + workload.modelSeconds), s * 8 + THINK_DONE);
  let lastScaleTick = 0;
  const eventSourceLimit = (now: number) =>
    quotas.eventSourceRampPerMinute === 0 ? quotas.eventSourceMax : Math.min(quotas.eventSourceMax, 5 + (quotas.eventSourceRampPerMinute * now) / 60);
  // A client's retry after a throttle backs off exponentially (1, 2, 4 … 30 s, with jitter), as the client SDKs do.
  const tries = new Uint8Array(n * 2);
  const backoff = (slot: number) => {
    const k = Math.min(5, tries[slot]!++);
    return Math.min(30, 2 ** k) * (0.5 + rand());
  };
  const wanted = new Float64Array(n);

  while (agenda.size > 0) {
    const [now, item] = agenda.pop();
    if (now > end) break;
    releaseHttpUntil(now);
    // Every 10 s each function may add `functionScalePer10s` executions over what it runs.
    while (now - lastScaleTick >= 10) {
      lastScaleTick += 10;
      workerEnvsAllowed = Math.max(workerEnvsAllowed, workers + quotas.functionScalePer10s);
      httpEnvsAllowed = Math.max(httpEnvsAllowed, http + quotas.functionScalePer10s);
    }
    const s = Math.floor(item / 8);
    const kind = item % 8;
    const measuring = now >= warmup;
    measuringNow = measuring;
    const second = Math.floor(now);
    if (kind === THINK_DONE) {
      if (tries[2 * s] === 0) wanted[s] = now;
      if (!take("http", now)) {
        if (measuring) throttledAdmissions++;
        agenda.push(now + backoff(2 * s), item);
        continue;
      }
      tries[2 * s] = 0;
      httpEnds.push(now + costs.admissionSeconds, 0);
      sentAt[s] = now;
      sqs[second] = sqs[second]! + 1; // SendMessage
      agenda.push(now + costs.admissionSeconds, s * 8 + WORKER_TRY);
      turnLive[s] = 1;
      for (let v = 0; v < workload.viewersPerSession; v++) agenda.push(now + costs.admissionSeconds, s * 8 + VIEWER_TRY);
    } else if (kind === WORKER_TRY) {
      if (workers >= eventSourceLimit(now)) {
        ceiling(`worker: the SQS event source's concurrency (${quotas.eventSourceMax}, +${quotas.eventSourceRampPerMinute}/min)`);
        // The event source takes the message when it has room: try again shortly.
        agenda.push(now + 0.5 + rand(), item);
        continue;
      }
      if (!take("worker", now)) {
        if (measuring) throttledWorkerStarts++;
        // A throttled invocation returns the message to the queue; the sweep re-rings the session within its interval.
        agenda.push(now + 60 + rand() * 30, item);
        continue;
      }
      // The wait counts from when the user sent the message (a throttled admission's retries included).
      if (measuring) waits.push(now - wanted[s]!);
      const duration = workload.modelSeconds + costs.workerHarnessSeconds;
      sqs[second] = sqs[second]! + costs.sqsRequestsPerTurn - 1;
      spread(writeUnits, now, workload.streamingSeconds, costs.deltaWriteUnitsPerTurn);
      spread(writeUnits, now, duration, costs.writeUnitsPerTurn - costs.deltaWriteUnitsPerTurn);
      spread(readUnits, now, duration, costs.readUnitsPerTurn);
      agenda.push(now + duration, s * 8 + TURN_DONE);
    } else if (kind === TURN_DONE) {
      release("worker");
      turnLive[s] = 0;
      if (measuring) turns++;
      agenda.push(now + exp(workload.thinkSeconds), s * 8 + THINK_DONE);
    } else if (kind === VIEWER_TRY) {
      if (turnLive[s] === 0) continue; // the run ended before the stream opened
      if (!take("http", now)) {
        if (measuring) throttledStreams++;
        agenda.push(now + backoff(2 * s + 1), item);
        continue;
      }
      tries[2 * s + 1] = 0;
      viewersOpen[s] = viewersOpen[s]! + 1;
      // The stream lives while the run does: until the turn's end, which is at most the rest of it.
      const remaining = Math.max(0.05, sentAt[s]! + costs.admissionSeconds + workload.modelSeconds + costs.workerHarnessSeconds - now);
      httpEnds.push(now + remaining, 0);
      spread(readUnits, now, Math.min(remaining, workload.streamingSeconds), costs.viewerReadUnitsPerSecond * Math.min(remaining, workload.streamingSeconds));
    }
  }

  measuringNow = true;
  const windowPeak = (meter: Float64Array) => {
    let peak = 0;
    for (let i = Math.ceil(warmup); i < Math.floor(end); i++) peak = Math.max(peak, meter[i]!);
    return peak;
  };
  const peakWriteUnits = windowPeak(writeUnits);
  const peakReadUnits = windowPeak(readUnits);
  const peakSqs = windowPeak(sqs) / 3; // send, receive and delete are separate actions; the peak per action is about a third
  if (peakWriteUnits > quotas.newTableWriteUnits) ceiling(`DynamoDB: a new on-demand table's initial ${quotas.newTableWriteUnits} writes/s (it adapts within ~30 min)`);
  if (peakReadUnits > quotas.newTableReadUnits) ceiling(`DynamoDB: a new on-demand table's initial ${quotas.newTableReadUnits} reads/s`);
  if (peakWriteUnits > quotas.tableWriteUnits) ceiling(`DynamoDB: the table's ${quotas.tableWriteUnits} write units/s quota`);
  if (peakReadUnits > quotas.tableReadUnits) ceiling(`DynamoDB: the table's ${quotas.tableReadUnits} read units/s quota`);
  if (peakSqs > quotas.sqsPerAction) ceiling(`SQS FIFO: ${quotas.sqsPerAction} transactions/s per API action`);
  const partitionWriteUnits = costs.deltaWriteUnitsPerTurn / workload.streamingSeconds;
  const partitionReadUnits = costs.viewerReadUnitsPerSecond * workload.viewersPerSession;
  if (partitionWriteUnits > quotas.partitionWriteUnits) ceiling("DynamoDB: one conversation's partition, writes");
  if (partitionReadUnits > quotas.partitionReadUnits) ceiling("DynamoDB: one conversation's partition, reads");
  waits.sort((a, b) => a - b);
  const pct = (p: number) => (waits.length === 0 ? NaN : waits[Math.min(waits.length - 1, Math.floor(p * waits.length))]!);
  return {
    turnsPerSecond: turns / seconds,
    queueP50: pct(0.5),
    queueP99: pct(0.99),
    throttledAdmissions: throttledAdmissions / seconds,
    throttledStreams: throttledStreams / seconds,
    throttledWorkerStarts: throttledWorkerStarts / seconds,
    peakWorkers,
    peakHttp,
    peakWriteUnits,
    peakReadUnits,
    peakSqsPerAction: peakSqs,
    partitionWriteUnits,
    partitionReadUnits,
    ceilings,
  };
}
