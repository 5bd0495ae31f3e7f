/**
 * The multitenant example's agent: `concierge`, one instance per tenant (`acme`, `globex`), its
 * system prompt built per tenant on every claim. Keyless: a deterministic model that takes
 * REPLY_MS (700) per answer and signs it as its prompt says, so runs are long enough to see
 * queueing inside a session and parallelism across sessions.
 */
import type { AgentDefinition } from "../../src/agent/agent-definition.ts";
import { keylessExampleModel, type KeylessTurn, type StreamBlock } from "../shared/keyless-model.ts";
import { TENANTS, tenantPrompt } from "./tenants.ts";

export const CONCIERGE = "concierge";

export const agents: Record<string, AgentDefinition> = {
  [CONCIERGE]: {
    description: "A tenant's customer concierge.",
    initialize: ({ instance, env }) => {
      const tenant = TENANTS[instance];
      // The policy (tenant-auth.ts) refuses unknown tenants before admission; this guards other entries.
      if (tenant === undefined) throw new Error(`unknown tenant ${JSON.stringify(instance)}`);
      const replyMs = Number(env("REPLY_MS") || 700);
      return {
        ...keylessExampleModel("local-concierge", (turn) => answer(turn, replyMs)),
        systemPrompt: tenantPrompt(tenant),
      };
    },
  },
};

function answer(turn: KeylessTurn, replyMs: number): StreamBlock[] {
  const signature = /Sign every answer "([^"]+)"/.exec(turn.systemPrompt)?.[1] ?? "(unsigned)";
  return [
    // The "thinking time" of the reply: one pause, abortable like a provider's request.
    { type: "hook", run: (signal) => pause(replyMs, signal) },
    { type: "text", text: `You said: ${turn.userText}\n— ${signature}` },
  ];
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
  });
}
