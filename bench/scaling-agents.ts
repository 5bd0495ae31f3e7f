/**
 * The agents module of the worker-scaling benchmark (`bench/scaling.ts`), bound to
 * `#harness-agents` on the local cloud: one agent whose model answers after a fixed latency
 * (`BENCH_MODEL_LATENCY_MS`, default 1000 here and in the benchmark), as a provider does, with a short reply. A worker
 * mostly waits on its model; this is what lets a second worker add throughput.
 */
import type { AgentDefinition } from "../src/agent/agent-definition.ts";
import { keylessModel, streamBlocks } from "../src/agent/block-stream.ts";

const model = keylessModel("bench-latency", "bench");

export const agents: Record<string, AgentDefinition> = {
  scale: {
    description: "Answers after a fixed model latency.",
    initialize: () => {
      const latencyMs = Number(process.env.BENCH_MODEL_LATENCY_MS ?? 1000);
      return {
        model,
        streamFn: (_m, _context, options) =>
          streamBlocks(
            model,
            async () => {
              await new Promise((resolve) => setTimeout(resolve, latencyMs));
              return [{ type: "text", text: "Done." }];
            },
            { signal: options?.signal },
          ),
      };
    },
  },
};
