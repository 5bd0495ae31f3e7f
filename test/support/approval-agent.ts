/**
 * A keyless support agent for tests of durable waits (ADR 0025) through the client and the CLI:
 * its model calls `refund` (needs approval above $100) for each "refund <amount>" in the user's
 * message and `wait_for_shipping_label` (a deferred tool) for "label"; after the tools it says what
 * they answered. Decides from the transcript alone, so any number of sessions can share it.
 */
import { defineTool } from "../../src/agent/define-tool.ts";
import { scriptedModel, type ScriptBlock, type ScriptStep } from "../../src/agent/scripted-model.ts";
import * as schema from "../../src/agent/tool-schema.ts";
import { createMemoryStore } from "../../src/memory/index.ts";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import { serve, type ServerHandle } from "../../src/server/server.ts";
import type { Store } from "../../src/store/store.ts";
import { lastUserText, textOf, type ModelMessage } from "./model-messages.ts";

/** One step for every provider call: reads the transcript and answers. */
const step: ScriptStep = (messages, call) => {
  const sent = messages as unknown as ModelMessage[];
  if (sent.at(-1)?.role === "toolResult") {
    const results = sent.slice(sent.findLastIndex((m) => m.role === "assistant") + 1);
    return [{ text: `done: ${results.map((m) => textOf(m)).join(" | ")}` }];
  }
  const text = lastUserText(messages);
  const calls: ScriptBlock[] = [...text.matchAll(/refund (\d+)/g)].map((m, i) => ({
    toolCall: { id: `refund-${call}-${i}`, name: "refund", arguments: { amount: Number(m[1]) } },
  }));
  if (/\blabel\b/.test(text)) calls.push({ toolCall: { id: `label-${call}`, name: "wait_for_shipping_label", arguments: { order: "A-17" } } });
  return calls.length > 0 ? calls : [{ text: "How can I help?" }];
};

/** What the tools did: refunds that ran, callbacks handed out. */
export interface ApprovalAgentLog {
  refunds: number[];
  callbacks: { callId: string; callbackId: string; callbackPath: string }[];
}

/** The `support` agent's definition, logging into `log`. */
export function supportAgent(log: ApprovalAgentLog) {
  const scripted = scriptedModel(Array.from({ length: 10_000 }, () => step));
  const refund = defineTool({
    name: "refund",
    label: "Refund",
    description: "Refund an amount in dollars to the customer.",
    parameters: schema.obj({ amount: schema.num() }),
    needsApproval: (args) => args.amount > 100,
    execute: async (_id, { amount }) => {
      log.refunds.push(amount);
      return { content: [{ type: "text", text: `refunded $${amount}` }], details: { amount } };
    },
  });
  const label = defineTool({
    name: "wait_for_shipping_label",
    label: "Shipping label",
    description: "Asks the warehouse for a shipping label and waits for it.",
    parameters: schema.obj({ order: schema.str() }),
    start: async (_args, { callId, callbackId, callbackPath }) => {
      log.callbacks.push({ callId, callbackId, callbackPath });
    },
  });
  return { initialize: () => ({ model: scripted.model, streamFn: scripted.streamFn, tools: [refund, label] }) };
}

export interface ApprovalServer {
  runtime: Runtime;
  store: Store;
  server: ServerHandle;
  url: string;
  log: ApprovalAgentLog;
  close(): Promise<void>;
}

/** A started runtime on the memory store with agent `support`, served on 127.0.0.1:0. */
export async function startApprovalServer(): Promise<ApprovalServer> {
  const log: ApprovalAgentLog = { refunds: [], callbacks: [] };
  const store = createMemoryStore();
  const runtime = createRuntime({ agents: { support: supportAgent(log) }, store, onObserverError: () => {} });
  await runtime.start();
  const server = await serve(runtime, { port: 0, hostname: "127.0.0.1", log: () => {} });
  return {
    runtime,
    store,
    server,
    url: server.url,
    log,
    async close() {
      await server.close();
      await runtime.close();
    },
  };
}
