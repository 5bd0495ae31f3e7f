import type { ConversationRecord } from "../../src/protocol/records.ts";
import type { AgentDefinition } from "../../src/agent/agent-definition.ts";
import type { EnginePhase } from "../../src/engine/engine-context.ts";
import { ManualClock } from "../../src/ports/clock.ts";
import type { HarnessEvent, Interceptor } from "../../src/ports/observer.ts";
import type { Store } from "../../src/store/store.ts";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import type { RuntimeConfig } from "../../src/runtime/runtime-config.ts";
import type { AgentSetup } from "../../src/agent/agent-setup.ts";
import { scriptedModel, type ScriptStep } from "../../src/agent/scripted-model.ts";
import { createMemoryStore } from "../../src/memory/index.ts";

/** Lets pending promise chains and macrotasks run (the engine is event-driven). */
export async function settleTicks(n = 20): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

/** An agent definition over a scripted model (steps are consumed across all runs of the agent). */
export function scriptedAgent(steps: ScriptStep[], extra: Partial<AgentSetup> = {}) {
  const scripted = scriptedModel(steps);
  const definition: AgentDefinition = {
    initialize: () => ({ model: scripted.model, streamFn: scripted.streamFn, ...extra }),
  };
  return { definition, scripted };
}

export interface TestServer {
  clock: ManualClock;
  store: Store;
  events: HarnessEvent[];
  runtime: Runtime;
  /** A fresh runtime over the same store and clock (the old one is expected to be closed). */
  restart(options?: { agents?: Record<string, AgentDefinition>; faults?: TestFaults }): Promise<Runtime>;
}

export type TestFaults = (phase: EnginePhase, submissionId: string) => void | Promise<void>;

export async function startTestServer(options: {
  agents: Record<string, AgentDefinition>;
  clock?: ManualClock;
  store?: Store;
  faults?: TestFaults;
  interceptors?: Interceptor[];
  leaseMs?: number;
  observers?: Array<(e: HarnessEvent) => void>;
  onObserverError?: (err: unknown, event: HarnessEvent) => void;
  /** More runtime configuration (subagents, ...). */
  config?: Partial<RuntimeConfig>;
}): Promise<TestServer> {
  const clock = options.clock ?? new ManualClock();
  const store = options.store ?? createMemoryStore({ clock });
  const events: HarnessEvent[] = [];
  const make = (agents: Record<string, AgentDefinition>, faults?: TestFaults) =>
    createRuntime({
      agents,
      store,
      clock,
      leaseMs: options.leaseMs ?? 30_000,
      flushPolicy: { bytes: 1024, intervalMs: 200 },
      observers: [(e) => events.push(e), ...(options.observers ?? [])],
      interceptors: options.interceptors,
      onObserverError: options.onObserverError,
      faults,
      sweepIntervalMs: 5_000,
      ...options.config,
    });
  const harness: TestServer = {
    clock,
    store,
    events,
    runtime: make(options.agents, options.faults),
    async restart(restartOptions = {}) {
      harness.runtime = make(restartOptions.agents ?? options.agents, restartOptions.faults);
      await harness.runtime.start();
      return harness.runtime;
    },
  };
  await harness.runtime.start();
  return harness;
}

/** All records of a conversation. */
export async function allRecords(store: Store, conversationId: string): Promise<ConversationRecord[]> {
  return store.readRecords(conversationId, "");
}

/** A promise that never settles until its signal aborts (a "hung" phase). */
export function hangForever(): Promise<never> {
  return new Promise<never>(() => {});
}
