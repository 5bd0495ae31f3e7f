/**
 * The approvals example's agent (ADR 0025). Keyless: a deterministic model whose answers are pure
 * functions of the transcript (a recovered run asks for the same calls), keyed to words of the
 * customer's message so the runbook can show each wait:
 *
 * - "refund <amount>" (one or more): a `refund` call each. A refund above $100 waits for a
 *   person's decision (`needsApproval`): the submission parks `waiting`, holding nothing, until
 *   someone approves (the refund runs once) or denies (the model reads why). Nobody deciding
 *   within APPROVAL_TIMEOUT_MS (24 h) denies it ("approval expired").
 * - "label": a `wait_for_shipping_label` call, a deferred tool. Its `start` hands the call's
 *   callback to the warehouse (here: a file in the warehouse's inbox, listed by
 *   `GET /warehouse/requests`) and the run parks until `POST /callbacks/:callbackId` answers.
 * - Once the tools answered, the model says what they answered.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AgentDefinition } from "../../src/agent/agent-definition.ts";
import { defineTool } from "../../src/agent/define-tool.ts";
import * as schema from "../../src/agent/tool-schema.ts";
import { keylessExampleModel, resultText, type KeylessTurn, type StreamBlock } from "../shared/keyless-model.ts";
import { log } from "../shared/settings.ts";

export const SUPPORT = "support";

const DAY_MS = 24 * 60 * 60 * 1000;

/** Refunds above this many dollars wait for a person's approval. */
export const APPROVAL_THRESHOLD = 100;

/** A label request the warehouse has not answered yet, as its inbox holds it. */
export interface LabelRequest {
  order: string;
  /** Where the warehouse answers: `POST <harness URL><callbackPath>` with `{"result": …}` or `{"error": "…"}`. */
  callbackPath: string;
  requestedAt: string;
}

/** The agents; `inbox` is the directory the warehouse reads label requests from. */
export function supportAgents(inbox: string): Record<string, AgentDefinition> {
  mkdirSync(inbox, { recursive: true });
  const refund = defineTool({
    name: "refund",
    label: "Refund",
    description: `Refund an amount in dollars to the customer. Refunds above $${APPROVAL_THRESHOLD} wait for a person's approval.`,
    parameters: schema.obj({ amount: schema.num({ minimum: 0 }), order: schema.str() }),
    needsApproval: (args) => args.amount > APPROVAL_THRESHOLD,
    execute: async (_callId, { amount, order }) => {
      log(`refund: $${amount} paid back for order ${order}`);
      return { content: [{ type: "text", text: `refunded $${amount} for order ${order}` }], details: { amount, order } };
    },
  });
  const label = defineTool({
    name: "wait_for_shipping_label",
    label: "Shipping label",
    description: "Asks the warehouse for a shipping label and waits (hours, days) for its answer.",
    parameters: schema.obj({ order: schema.str() }),
    // Runs once per call (after its callback_started record is durable): hand the callback out.
    start: async ({ order }, { callId, callbackPath }) => {
      const request: LabelRequest = { order, callbackPath, requestedAt: new Date().toISOString() };
      writeFileSync(join(inbox, `${callId}.json`), JSON.stringify(request));
      log(`warehouse: label requested for order ${order}; it answers at POST ${callbackPath}`);
    },
  });
  return {
    [SUPPORT]: {
      description: "Customer support: refunds (a person approves the large ones) and shipping labels (the warehouse answers later).",
      initialize: ({ env }) => {
        const approvalTimeoutMs = Number(env("APPROVAL_TIMEOUT_MS") || DAY_MS);
        return {
          ...keylessExampleModel("local-support", supportAnswer),
          systemPrompt: "You are a support agent. Refund what the customer asks; ask the warehouse for shipping labels.",
          tools: [refund, label],
          approvalTimeoutMs,
          // No submissionTimeoutMs: the default budget is 1 h plus the longest wait of these tools
          // (the approval's APPROVAL_TIMEOUT_MS or the label's 24 h), so the person has their day.
        };
      },
    },
  };
}

function supportAnswer(turn: KeylessTurn): StreamBlock[] {
  if (turn.results.length > 0) return [{ type: "text", text: turn.results.map((r) => resultText(r)).join("; ") }];
  const text = turn.userText;
  const order = /\border ([A-Za-z0-9-]+)/.exec(text)?.[1] ?? "A-17";
  const calls: StreamBlock[] = [...text.matchAll(/\brefund \$?(\d+(?:\.\d+)?)/g)].map((m, i) => ({
    type: "toolCall",
    id: `call_refund_${turn.userIndex}_${i}`,
    name: "refund",
    arguments: { amount: Number(m[1]), order },
  }));
  if (/\blabel\b/.test(text)) calls.push({ type: "toolCall", id: `call_label_${turn.userIndex}`, name: "wait_for_shipping_label", arguments: { order } });
  if (calls.length > 0) return calls;
  return [{ type: "text", text: 'I can refund an order ("refund 40 for order A-17") or get its shipping label ("label for order A-17").' }];
}
