/**
 * Harness overhead: the wall time of a 20-turn scripted conversation (each turn ~50 text deltas
 * and one tool call, no artificial model delay) through the runtime on the memory store, divided
 * by the same conversation through a bare pi Agent. Runs alternate side by side; medians. Each
 * run's CPU time (`process.cpuUsage()`, user + system) is reported beside its wall time: on a
 * shared machine the wall time includes the time other processes held the core.
 */
import { Agent, type AgentTool } from "@earendil-works/pi-agent-core";
import { createRuntime } from "../src/runtime/runtime.ts";
import { scriptedModel, type ScriptStep } from "../src/agent/scripted-model.ts";
import { createMemoryStore } from "../src/memory/index.ts";
import { median } from "./stats.ts";

const TURNS = 20;
const DELTAS_PER_TURN = 50;
const CHUNK = 4;
const SYSTEM_PROMPT = "You are a benchmark assistant.";

function steps(turns = TURNS): ScriptStep[] {
  const text = "x".repeat(DELTAS_PER_TURN * CHUNK);
  const out: ScriptStep[] = [];
  for (let i = 0; i < turns - 1; i++) {
    out.push([{ text }, { toolCall: { id: `call-${i}`, name: "noop", arguments: { i } } }]);
  }
  out.push([{ text }]);
  return out;
}

const noop: AgentTool<any> = {
  name: "noop",
  label: "noop",
  description: "Does nothing.",
  parameters: { type: "object", properties: { i: { type: "number" } } },
  execute: async () => ({ content: [{ type: "text", text: "ok" }], details: {} }),
};

/**
 * A bare pi Agent; `listener`: with one (empty) event listener, the least any harness that
 * records the agent's events adds (pi awaits each listener per event): the floor of the target.
 */
/** Wall and CPU time of one run, ms. */
interface Timed {
  ms: number;
  cpu: number;
}

function cpuMsSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

async function bare(turns = TURNS, listener = false): Promise<Timed> {
  const m = scriptedModel(steps(turns), { chunkSize: CHUNK });
  const agent = new Agent({ initialState: { systemPrompt: SYSTEM_PROMPT, model: m.model, tools: [noop] }, streamFn: m.streamFn });
  if (listener) agent.subscribe(() => {});
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await agent.prompt("go");
  const ms = performance.now() - t0;
  const cpu = cpuMsSince(c0);
  if (m.remaining() !== 0) throw new Error("bare run did not use the whole script");
  return { ms, cpu };
}

async function harness(turns = TURNS): Promise<Timed> {
  const m = scriptedModel(steps(turns), { chunkSize: CHUNK });
  const runtime = createRuntime({
    agents: { bench: { initialize: () => ({ model: m.model, streamFn: m.streamFn, systemPrompt: SYSTEM_PROMPT, tools: [noop] }) } },
    store: createMemoryStore(),
  });
  await runtime.start();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const { submissionId } = await runtime.dispatch({ agent: "bench", instance: "b", message: { kind: "user", body: "go" } });
  const payload = await runtime.wait(submissionId);
  const ms = performance.now() - t0;
  const cpu = cpuMsSince(c0);
  await runtime.close();
  if (payload.status !== "succeeded" || m.remaining() !== 0) throw new Error(`harness run failed: ${JSON.stringify(payload)}`);
  return { ms, cpu };
}

export async function benchOverhead(runs = 15): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await bare();
    await harness();
  }
  const bareTimes: Timed[] = [];
  const floorTimes: Timed[] = [];
  const harnessTimes: Timed[] = [];
  for (let i = 0; i < runs; i++) {
    bareTimes.push(await bare());
    floorTimes.push(await bare(TURNS, true));
    harnessTimes.push(await harness());
  }
  // One-turn runs separate the fixed cost of a submission (admit, claim, marker, rebuild,
  // settle, wait) from the cost the harness adds per turn.
  const bareOne: Timed[] = [];
  const harnessOne: Timed[] = [];
  for (let i = 0; i < runs; i++) {
    bareOne.push(await bare(1));
    harnessOne.push(await harness(1));
  }
  const wall = (ts: Timed[]) => median(ts.map((t) => t.ms));
  const cpu = (ts: Timed[]) => median(ts.map((t) => t.cpu));
  const b = wall(bareTimes);
  const h = wall(harnessTimes);
  const fixed = wall(harnessOne) - wall(bareOne);
  const perTurn = (h - b - fixed) / (TURNS - 1);
  console.log(`harness overhead: ${TURNS} turns × ${DELTAS_PER_TURN} deltas + 1 tool call, memory store, median of ${runs}`);
  console.log(`  bare pi Agent      ${b.toFixed(2)} ms (CPU ${cpu(bareTimes).toFixed(2)} ms)`);
  console.log(`  through runtime    ${h.toFixed(2)} ms (CPU ${cpu(harnessTimes).toFixed(2)} ms)`);
  console.log(`  fixed per submission ${fixed.toFixed(2)} ms, added per turn ${perTurn.toFixed(3)} ms (target ≤ 1.3x)`);
  const floor = wall(floorTimes);
  console.log(`  bare Agent + 1 listener ${floor.toFixed(2)} ms (CPU ${cpu(floorTimes).toFixed(2)} ms; the floor: ${(floor / b).toFixed(2)}x)`);
  console.log(`overhead ${(h / b).toFixed(2)}x (target ≤ 1.3x; floor ${(floor / b).toFixed(2)}x; ${(h / floor).toFixed(2)}x the floor)`);
  const cb = cpu(bareTimes);
  console.log(
    `overhead by CPU time ${(cpu(harnessTimes) / cb).toFixed(2)}x (floor ${(cpu(floorTimes) / cb).toFixed(2)}x; ` +
      `${(cpu(harnessTimes) / cpu(floorTimes)).toFixed(2)}x the floor)`,
  );
}
