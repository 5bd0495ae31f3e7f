/**
 * The agent of the durable-wait tests on the local cloud (bound to `#harness-agents`; ADR 0025):
 * a model whose answers are pure functions of the transcript (each Lambda process has its own
 * copy), and tools that leave a file per run in `HARNESS_TEST_WAIT_DIR`, so a test counts runs
 * across processes (a killed worker's included).
 *
 * `support`'s model reads the last user message `<tag>: ...`: for each `refund <amount>` it calls
 * `refund` (call id `<tag>-refund-<i>`; approval above $100), for `label` it calls the deferred
 * `wait_for_shipping_label` (call id `<tag>-label`), for `void` it calls `void_order` (call id
 * `<tag>-void`; always asks approval, which expires after 2 s), for `check` it calls `task` (call
 * id `<tag>-check`) on the subagent `checker`, and with the tools' results it answers
 * `done: <result> | <result>`. `checker` answers `checked <tag>` once the file `gate-<tag>`
 * exists in that folder (a child the test holds running). For `wire <amount>` it calls
 * `wire_transfer` (call id `<tag>-wire`; always asks approval), which, once approved, leaves
 * `ran-<callId>` (its process id) and runs until the file `gate-<callId>` exists, then leaves
 * `done-<callId>`: a tool the test can kill mid-run.
 */
import { appendFileSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { StreamFn } from "@earendil-works/pi-agent-core";
import type { Message } from "@earendil-works/pi-ai";
import type { AgentDefinition } from "../../../src/agent/agent-definition.ts";
import { keylessModel, streamBlocks, type StreamBlock } from "../../../src/agent/block-stream.ts";
import { defineTool } from "../../../src/agent/define-tool.ts";
import * as schema from "../../../src/agent/tool-schema.ts";

const dir = () => {
  const d = process.env.HARNESS_TEST_WAIT_DIR;
  if (!d) throw new Error("HARNESS_TEST_WAIT_DIR is not set");
  return d;
};

function text(m: Message): string {
  if (m.role === "assistant") return m.content.map((c) => (c.type === "text" ? c.text : "")).join("");
  return typeof m.content === "string" ? m.content : m.content.map((c) => (c.type === "text" ? c.text : "")).join("");
}

const supportStream: StreamFn = (m, context, options) =>
  streamBlocks(
    m,
    (): StreamBlock[] => {
      const messages = context.messages as Message[];
      const lastUser = messages.findLastIndex((x) => x.role === "user");
      const results = messages.slice(lastUser + 1).filter((x) => x.role === "toolResult");
      if (results.length > 0) return [{ type: "text", text: `done: ${results.map(text).join(" | ")}` }];
      const said = text(messages[lastUser]!);
      const tag = said.match(/^([\w-]+):/)?.[1] ?? "untagged";
      const calls: StreamBlock[] = [...said.matchAll(/refund (\d+)/g)].map((r, i) => ({
        type: "toolCall",
        id: `${tag}-refund-${i}`,
        name: "refund",
        arguments: { amount: Number(r[1]) },
      }));
      if (/\bvoid\b/.test(said)) calls.push({ type: "toolCall", id: `${tag}-void`, name: "void_order", arguments: { order: tag } });
      if (/\blabel\b/.test(said)) calls.push({ type: "toolCall", id: `${tag}-label`, name: "wait_for_shipping_label", arguments: { order: tag } });
      const wire = said.match(/\bwire (\d+)/);
      if (wire) calls.push({ type: "toolCall", id: `${tag}-wire`, name: "wire_transfer", arguments: { amount: Number(wire[1]) } });
      if (/\bcheck\b/.test(said)) calls.push({ type: "toolCall", id: `${tag}-check`, name: "task", arguments: { agent: "checker", prompt: tag } });
      return calls.length > 0 ? calls : [{ type: "text", text: `noted: ${said}` }];
    },
    { signal: options?.signal },
  );

const refund = defineTool({
  name: "refund",
  label: "Refund",
  description: "Refund an amount in dollars to the customer.",
  parameters: schema.obj({ amount: schema.num() }),
  needsApproval: (args) => args.amount > 100,
  execute: async (callId, { amount }) => {
    appendFileSync(join(dir(), `ran-${callId}`), `${process.pid}\n`);
    return { content: [{ type: "text", text: `refunded $${amount}` }], details: { amount } };
  },
});

const voidOrder = defineTool({
  name: "void_order",
  label: "Void order",
  description: "Voids an order.",
  parameters: schema.obj({ order: schema.str() }),
  needsApproval: true,
  approvalTimeoutMs: 2_000,
  execute: async (callId, { order }) => {
    appendFileSync(join(dir(), `ran-${callId}`), `${process.pid}\n`);
    return { content: [{ type: "text", text: `voided ${order}` }], details: { order } };
  },
});

const wireTransfer = defineTool({
  name: "wire_transfer",
  label: "Wire transfer",
  description: "Wires an amount in dollars; takes a while.",
  parameters: schema.obj({ amount: schema.num() }),
  needsApproval: true,
  execute: async (callId, { amount }, signal) => {
    appendFileSync(join(dir(), `ran-${callId}`), `${process.pid}\n`);
    while (!existsSync(join(dir(), `gate-${callId}`)) && !signal?.aborted) await new Promise((r) => setTimeout(r, 100));
    appendFileSync(join(dir(), `done-${callId}`), `${process.pid}\n`);
    return { content: [{ type: "text", text: `wired $${amount}` }], details: { amount } };
  },
});

const label = defineTool({
  name: "wait_for_shipping_label",
  label: "Shipping label",
  description: "Asks the warehouse for a shipping label and waits for it.",
  parameters: schema.obj({ order: schema.str() }),
  start: async (_args, { callId, callbackId }) => {
    appendFileSync(join(dir(), `started-${callId}`), `${process.pid}\n`);
    writeFileSync(join(dir(), `callback-${callId}`), callbackId);
  },
});

const checkerStream: StreamFn = (m, context, options) =>
  streamBlocks(
    m,
    (): StreamBlock[] => {
      const tag = text((context.messages as Message[]).findLast((x) => x.role === "user")!).trim();
      const gate = join(dir(), `gate-${tag}`);
      return [
        {
          type: "hook",
          run: async (signal) => {
            while (!existsSync(gate) && !signal?.aborted) await new Promise((r) => setTimeout(r, 100));
          },
        },
        { type: "text", text: `checked ${tag}` },
      ];
    },
    { signal: options?.signal },
  );

export const agents: Record<string, AgentDefinition> = {
  support: {
    description: "Customer support: refunds and shipping labels",
    initialize: () => ({ model: keylessModel("support", "local"), streamFn: supportStream, tools: [refund, voidOrder, wireTransfer, label] }),
  },
  checker: {
    description: "Checks an order",
    initialize: () => ({ model: keylessModel("checker", "local"), streamFn: checkerStream }),
  },
};

/** `support` may delegate to `checker` (the `task` tool). */
export const subagents = { support: ["checker"] };
