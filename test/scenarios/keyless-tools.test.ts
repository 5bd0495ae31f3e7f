/**
 * Issue 37 point 3: the keyless model calls the agent's own tools, so a tool that waits for a
 * person can be seen waiting without a key. Through a runtime: `/refund {"amount":240}` calls
 * `refund`, which needs approval above $100, so the submission parks `waiting` on it; approved,
 * the refund runs and the model names its result.
 */
import { afterEach, describe, expect, it } from "vitest";
import { defineTool } from "../../src/agent/define-tool.ts";
import { localModel } from "../../src/agent/local-model.ts";
import * as schema from "../../src/agent/tool-schema.ts";
import { createMemoryStore } from "../../src/memory/index.ts";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import type { Store } from "../../src/store/store.ts";
import { allRecords } from "../support/runtime-kit.ts";

let runtime: Runtime | undefined;
afterEach(async () => {
  await runtime?.close();
  runtime = undefined;
});

async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  const end = Date.now() + 10_000;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("the keyless model drives the agent's own tools", () => {
  it('`/refund {"amount":240}` calls refund, which waits for approval; approved, it runs and the reply names the result', async () => {
    const runs: number[] = [];
    const refund = defineTool({
      name: "refund",
      label: "Refund",
      description: "Refund an amount in dollars; above $100 a person approves.",
      parameters: schema.obj({ amount: schema.num({ minimum: 0 }) }),
      needsApproval: (args) => args.amount > 100,
      execute: async (_id, { amount }) => {
        runs.push(amount);
        return { content: [{ type: "text", text: `refunded $${amount}` }], details: { amount } };
      },
    });
    const store: Store = createMemoryStore();
    runtime = createRuntime({ store, agents: { support: { initialize: () => ({ ...localModel(), tools: [refund] }) } } });
    await runtime.start();
    const address = { agent: "support", instance: "shop" };
    const { submissionId, conversationId } = await runtime.dispatch({ ...address, message: { kind: "user", body: '/refund {"amount":240}' } });

    const parked = await until("the approval wait", () => store.getSubmission(submissionId), (s) => s.status === "waiting");
    expect(parked.waitingFor).toMatchObject([{ kind: "approval", toolName: "refund" }]);
    const pending = await runtime.pendingApprovals(address);
    expect(pending).toMatchObject([{ submissionId, toolName: "refund", args: { amount: 240 } }]);
    expect(runs, "nothing runs before the decision").toEqual([]);

    await runtime.decide({ ...address, submissionId, callId: pending[0]!.callId, approved: true });
    expect(await runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    expect(runs).toEqual([240]);
    const log = await allRecords(store, conversationId);
    const replies = log.filter((r) => r.kind === "assistant_message_completed").map((r) => JSON.stringify(r.payload));
    expect(replies.at(-1)).toContain("`refund` returned: refunded $240");
  });
});
