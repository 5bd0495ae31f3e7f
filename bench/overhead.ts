/**
 * Harness overhead: the wall time of a 20-turn scripted conversation (each turn ~50 text deltas
 * and one tool call, no artificial model delay) through the runtime on the memory store, divided
 * by the same conversation through a bare pi Agent. Runs alternate side by side; medians.
 */
import { Agent, type AgentTool } from "@earendil-works/pi-agent-core";
import { createRuntime } from "../src/runtime/runtime.ts";
import { scriptedModel, type ScriptStep } from "../src/session/scripted-model.ts";
import { createMemoryStore } from "../src/stores/memory/index.ts";
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
async function bare(turns = TURNS, listener = false): Promise<number> {
  const m = scriptedModel(steps(turns), { chunkSize: CHUNK });
  const agent = new Agent({ initialState: { systemPrompt: SYSTEM_PROMPT, model: m.model, tools: [noop] }, streamFn: m.streamFn });
  if (listener) agent.subscribe(() => {});
  const t0 = performance.now();
  await agent.prompt("go");
  const ms = performance.now() - t0;
  if (m.remaining() !== 0) throw new Error("bare run did not use the whole script");
  return ms;
}

async function harness(turns = TURNS): Promise<number> {
  const m = scriptedModel(steps(turns), { chunkSize: CHUNK });
  const runtime = createRuntime({
    agents: { bench: { initialize: () => ({ model: m.model, streamFn: m.streamFn, systemPrompt: SYSTEM_PROMPT, tools: [noop] }) } },
    store: createMemoryStore(),
  });
  await runtime.start();
  const t0 = performance.now();
  const { submissionId } = await runtime.dispatch({ agent: "bench", instance: "b", message: { kind: "user", body: "go" } });
  const payload = await runtime.wait(submissionId);
  const ms = performance.now() - t0;
  await runtime.close();
  if (payload.status !== "succeeded" || m.remaining() !== 0) throw new Error(`harness run failed: ${JSON.stringify(payload)}`);
  return ms;
}

export async function benchOverhead(runs = 15): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await bare();
    await harness();
  }
  const bareTimes: number[] = [];
  const floorTimes: number[] = [];
  const harnessTimes: number[] = [];
  for (let i = 0; i < runs; i++) {
    bareTimes.push(await bare());
    floorTimes.push(await bare(TURNS, true));
    harnessTimes.push(await harness());
  }
  // One-turn runs separate the fixed cost of a submission (admit, claim, marker, rebuild,
  // settle, wait) from the cost the harness adds per turn.
  const bareOne: number[] = [];
  const harnessOne: number[] = [];
  for (let i = 0; i < runs; i++) {
    bareOne.push(await bare(1));
    harnessOne.push(await harness(1));
  }
  const b = median(bareTimes);
  const h = median(harnessTimes);
  const fixed = median(harnessOne) - median(bareOne);
  const perTurn = (h - b - fixed) / (TURNS - 1);
  console.log(`harness overhead: ${TURNS} turns × ${DELTAS_PER_TURN} deltas + 1 tool call, memory store, median of ${runs}`);
  console.log(`  bare pi Agent      ${b.toFixed(2)} ms`);
  console.log(`  through runtime    ${h.toFixed(2)} ms`);
  console.log(`  fixed per submission ${fixed.toFixed(2)} ms, added per turn ${perTurn.toFixed(3)} ms (target ≤ 1.3x)`);
  const floor = median(floorTimes);
  console.log(`  bare Agent + 1 listener ${floor.toFixed(2)} ms (the floor: ${(floor / b).toFixed(2)}x)`);
  console.log(`overhead ${(h / b).toFixed(2)}x (target ≤ 1.3x; floor ${(floor / b).toFixed(2)}x; ${(h / floor).toFixed(2)}x the floor)`);
}
