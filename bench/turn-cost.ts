/**
 * Cost per 1,000 assistant turns on AWS, all of it, at a stated model latency: DynamoDB (the
 * units per turn `npm run bench -- aws` measures), the heartbeats while the worker waits on the
 * model (a lease renewal, an UpdateItem, and an SQS visibility change every lease/3), and Lambda
 * duration of the worker for the whole turn, at each memory size. A calculation from list prices
 * (`prices.ts`) and measured units; the worker's memory fit is not measured here.
 */
import { PRICE_NOTE, PRICES } from "./prices.ts";

export interface TurnCostInputs {
  /** Seconds the worker spends per assistant turn, nearly all of it waiting on the model. */
  modelSecondsPerTurn: number;
  /** DynamoDB units per assistant turn (bench aws: 5.0 write, 9.9 read, from item sizes). */
  writeUnitsPerTurn: number;
  readUnitsPerTurn: number;
  /** The lease (the heartbeat runs every third of it). */
  leaseSeconds: number;
}

export const TURN_COST_DEFAULTS: TurnCostInputs = { modelSecondsPerTurn: 10, writeUnitsPerTurn: 5.0, readUnitsPerTurn: 9.9, leaseSeconds: 30 };

/** Dollars per 1,000 assistant turns at `memoryMb`, by part. */
export function turnCost(inputs: TurnCostInputs, memoryMb: number) {
  const turns = 1_000;
  const beats = (inputs.modelSecondsPerTurn / (inputs.leaseSeconds / 3)) * turns;
  const dynamo = (turns * inputs.writeUnitsPerTurn * PRICES.dynamoWriteMillion + turns * inputs.readUnitsPerTurn * PRICES.dynamoReadMillion) / 1e6;
  const heartbeats = (beats * PRICES.dynamoWriteMillion + beats * PRICES.sqsFifoMillion) / 1e6;
  const duration = turns * inputs.modelSecondsPerTurn * (memoryMb / 1024) * PRICES.lambdaArmGbSecond;
  return { dynamo, heartbeats, duration, total: dynamo + heartbeats + duration };
}

export async function benchTurnCost(inputs: TurnCostInputs = TURN_COST_DEFAULTS): Promise<void> {
  console.log(`cost per 1,000 assistant turns, the worker waiting ${inputs.modelSecondsPerTurn} s on the model per turn (${PRICE_NOTE})`);
  for (const mb of [128, 256, 512, 1024]) {
    const c = turnCost(inputs, mb);
    console.log(
      `  worker ${String(mb).padStart(4)} MB: $${c.total.toFixed(4)} = DynamoDB $${c.dynamo.toFixed(4)} + heartbeats $${c.heartbeats.toFixed(4)} + Lambda duration $${c.duration.toFixed(4)}`,
    );
  }
  console.log("  (a submission adds its own: admission, claim, settlement, one Lambda request and its SQS messages; bench aws prints them)");
}
