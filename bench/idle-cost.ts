/**
 * What a deployment of the `Harness` construct costs per month when nobody uses it, from
 * published prices, the construct's defaults, and two measured inputs (the sweeper's read units
 * and duration per run). Prints every assumption beside its line.
 */
import { DEFAULT_MEMORY_MB } from "../src/cdk/memory-sizes.ts";
import { PRICES, PRICE_NOTE } from "./prices.ts";
import { note } from "./report.ts";

const MINUTES_PER_MONTH = 30 * 24 * 60;

export interface IdleInputs {
  /** Read units one sweep of an idle table consumes (DynamoDB minimums applied). */
  sweepReadUnits: number;
  /** Queries and gets per sweep (for the printout). */
  sweepCommands: number;
  /** Measured warm duration of one sweeper invocation, ms. */
  sweepMs: number;
  /** Measured duration of one dlq drain of an empty dead-letter queue (one short receive), ms. */
  drainMs: number;
}

interface Line {
  item: string;
  usage: string;
  dollars: number;
  /** The same line after the account's always-free tiers (if it is the only user of them). */
  withFreeTier: number;
}

/** Prints the idle cost table; returns the monthly total without free tiers. */
export function printIdleCost(inputs: IdleInputs): number {
  // Lambda's SQS event source long-polls its queue; assumed 5 pollers × 20 s receives. Only the
  // work queue has one: the dlq function drains the dead-letter queue on the sweep schedule.
  const pollers = 5;
  const queues = 1;
  const receives = queues * pollers * (60 / 20) * MINUTES_PER_MONTH;
  const sweeps = MINUTES_PER_MONTH; // rate(1 minute)
  const sweeperMemoryGb = DEFAULT_MEMORY_MB.sweeper / 1024;
  const dlqMemoryGb = DEFAULT_MEMORY_MB.dlq / 1024;
  // Lambda bills at least 1 ms; assume the invocation overhead brings a warm run to ≥ 100 ms.
  const billedMs = Math.max(100, Math.ceil(inputs.sweepMs));
  const gbSeconds = sweeps * (billedMs / 1000) * sweeperMemoryGb;
  const drainBilledMs = Math.max(100, Math.ceil(inputs.drainMs));
  const drainGbSeconds = sweeps * (drainBilledMs / 1000) * dlqMemoryGb;
  const sweepReads = sweeps * inputs.sweepReadUnits;
  // An idle sweep logs only Lambda's START/END/REPORT platform lines (~0.35 KB): its own line is
  // at debug level and it publishes no metrics when it finds nothing (src/lambda/sweeper.ts).
  const logGb = (2 * sweeps * 0.35 * 1024) / 1024 ** 3;
  const lines: Line[] = [
    {
      item: "SQS event-source polling",
      usage: `${queues} FIFO queue (the work queue) × ${pollers} pollers × 3 empty 20 s receives/min = ${(receives / 1e6).toFixed(2)} M requests`,
      dollars: (receives / 1e6) * PRICES.sqsFifoMillion,
      withFreeTier: (Math.max(0, receives - 1e6) / 1e6) * PRICES.sqsFifoMillion,
    },
    {
      item: "sweeper invocations",
      usage: `${sweeps} runs (rate 1 min) × ${billedMs} ms billed (measured ${inputs.sweepMs.toFixed(0)} ms warm, local) × ${DEFAULT_MEMORY_MB.sweeper} MB arm64 = ${gbSeconds.toFixed(0)} GB-s`,
      dollars: gbSeconds * PRICES.lambdaArmGbSecond + (sweeps / 1e6) * PRICES.lambdaRequestMillion,
      withFreeTier: 0,
    },
    {
      item: "dead-letter drain",
      usage: `${sweeps} dlq runs on the sweep schedule × ${drainBilledMs} ms billed (measured ${inputs.drainMs.toFixed(0)} ms, local) × ${DEFAULT_MEMORY_MB.dlq} MB = ${drainGbSeconds.toFixed(0)} GB-s, + ${sweeps} short receives`,
      dollars:
        drainGbSeconds * PRICES.lambdaArmGbSecond + (sweeps / 1e6) * PRICES.lambdaRequestMillion + (sweeps / 1e6) * PRICES.sqsFifoMillion,
      withFreeTier: 0,
    },
    {
      item: "sweeper reads",
      usage: `${inputs.sweepReadUnits} read units per sweep (measured: ${inputs.sweepCommands} requests, 0.5 unit minimum each) = ${(sweepReads / 1e6).toFixed(2)} M`,
      dollars: (sweepReads / 1e6) * PRICES.dynamoReadMillion,
      withFreeTier: (sweepReads / 1e6) * PRICES.dynamoReadMillion,
    },
    {
      item: "sweeper custom metrics",
      usage: "none while idle: the sweeper publishes a count only when a sweep acted",
      dollars: 0,
      withFreeTier: 0,
    },
    {
      item: "sweeper logs",
      usage: `~0.35 KB per run of the sweeper and of the drain (platform lines only) = ${(logGb * 1024).toFixed(0)} MB ingested`,
      dollars: logGb * PRICES.logIngestGb,
      withFreeTier: 0,
    },
    {
      item: "CloudWatch alarms",
      usage: `none by default; with an alarmTopic 3 standard alarms (DLQ arrivals, DLQ age, worker errors) add $${(3 * PRICES.alarmMonth).toFixed(2)}`,
      dollars: 0,
      withFreeTier: 0,
    },
    {
      item: "storage",
      usage: "table + PITR, bucket, log groups of an unused deployment: ~0 GB",
      dollars: 0,
      withFreeTier: 0,
    },
  ];
  const total = lines.reduce((s, l) => s + l.dollars, 0);
  const free = lines.reduce((s, l) => s + l.withFreeTier, 0);
  for (const l of lines) note(`  ${l.item.padEnd(26)} $${l.dollars.toFixed(3).padStart(6)}  ${l.usage}`);
  note(
    `  free of charge while idle: the function URL, EventBridge scheduled rules, SQS/S3-managed encryption, on-demand ` +
      `DynamoDB with no traffic; prices: ${PRICE_NOTE}; SQS ${PRICES.sqsFifoMillion}/M FIFO requests, Lambda ` +
      `${PRICES.lambdaArmGbSecond}/GB-s + ${PRICES.lambdaRequestMillion}/M requests, alarms ${PRICES.alarmMonth}/month, ` +
      `custom metrics ${PRICES.customMetricMonth}/month, logs ${PRICES.logIngestGb}/GB, DynamoDB ${PRICES.dynamoReadMillion}/M reads, ` +
      `storage ${PRICES.dynamoStorageGbMonth} + ${PRICES.dynamoPitrGbMonth} (PITR) / GB-month, S3 ${PRICES.s3GbMonth}/GB-month`,
  );
  note(
    `idle cost per month: $${total.toFixed(2)} at list prices; $${free.toFixed(2)} if the account's always-free tiers ` +
      `(1 M SQS requests, Lambda 1 M requests + 400,000 GB-s, 10 metrics, 10 alarms, 5 GB logs) are otherwise unused`,
  );
  return total;
}
