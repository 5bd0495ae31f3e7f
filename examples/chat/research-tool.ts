import type { AgentTool } from "../../src/agent/agent-setup.ts";
import { defineTool } from "../../src/agent/define-tool.ts";
import * as schema from "../../src/agent/tool-schema.ts";

const parameters = schema.obj({
  topic: schema.str({ minLength: 1, description: "What to look into." }),
});

/** What the result carries beside its text. */
export interface ResearchDetails {
  topic: string;
  tookMs: number;
}

/**
 * `research`: a deliberately slow tool (it "reads sources" for `durationMs`) so a person has time
 * to steer or cancel the run while it works. Keyless and offline: its findings are made up from
 * the topic. An abort (a cancel, a shutdown) ends it at once as an error result.
 */
export function researchTool(durationMs: number): AgentTool<typeof parameters, ResearchDetails> {
  return defineTool<typeof parameters, ResearchDetails>({
    name: "research",
    label: "Research a topic",
    description: "Looks a topic up in (imaginary) sources and returns three findings. Takes a while.",
    parameters,
    async execute(_callId, { topic }, signal) {
      const started = Date.now();
      const finished = await new Promise<boolean>((resolve) => {
        if (signal?.aborted) return resolve(false);
        const timer = setTimeout(() => resolve(true), durationMs);
        signal?.addEventListener("abort", () => (clearTimeout(timer), resolve(false)), { once: true });
      });
      const tookMs = Date.now() - started;
      if (!finished) return { content: [{ type: "text", text: `research on ${topic} stopped` }], details: { topic, tookMs }, isError: true };
      const findings = [`${topic} is older than it looks`, `${topic} has two rival schools`, `${topic} is cheaper at scale`];
      return { content: [{ type: "text", text: findings.map((f, i) => `${i + 1}. ${f}`).join("\n") }], details: { topic, tookMs } };
    },
  });
}
