/**
 * Conversation retention against a parent that waits on a person (issue 33, point 1; ADR 0041):
 * the retention sweep tries to delete the parent's conversation while the parent is still busy.
 * The deletion must be refused before anything is deleted: the subagent's conversation, settled
 * before its parent parked, is still there when the park looks for its outcome, so the parent
 * reads the child's real answer, not `task wait expired`.
 *
 * The interleaving is forced at the `parking` fault phase: the child has settled (its wake found
 * the parent still running), then the retention sweep runs as if two hours had passed (its `now`
 * handed in; the runtime's clock is left alone so no lease looks expired), then the parent parks
 * on the approval and the child.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineTool } from "../../src/agent/define-tool.ts";
import { scriptedModel, type ScriptStep } from "../../src/agent/scripted-model.ts";
import * as schema from "../../src/agent/tool-schema.ts";
import { expireIdleConversations, type RetentionSweepStore } from "../../src/engine/conversation-retention.ts";
import { createMemoryStore } from "../../src/memory/index.ts";
import type { FaultPhase } from "../../src/ports/faults.ts";
import { createRuntime } from "../../src/runtime/runtime.ts";
import { openSqliteStore } from "../../src/sqlite/index.ts";
import type { Store } from "../../src/store/store.ts";
import { textOf, toolResults } from "../support/model-messages.ts";

const HOUR = 3_600_000;
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "retention-refused-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each([
  ["memory", () => createMemoryStore()],
  ["sqlite", () => openSqliteStore({ path: join(dir, `r-${Math.random().toString(36).slice(2)}.db`) })],
])("a refused retention deletion (%s store)", (_name, makeStore) => {
  it("a parent waiting on a person past the retention reads its settled child's real outcome", async () => {
    const store: Store = makeStore();
    const summary: ScriptStep = (messages) => [{ text: `done: ${toolResults(messages).map((m) => textOf(m)).join(" | ")}` }];
    const lead = scriptedModel([
      [
        { toolCall: { id: "call-r", name: "refund", arguments: { amount: 250 } } },
        { toolCall: { id: "call-t", name: "task", arguments: { agent: "researcher", prompt: "check the order" } } },
      ],
      summary,
    ]);
    const researcher = scriptedModel([[{ text: "order is fine" }]]);
    const refund = defineTool({
      name: "refund",
      label: "Refund",
      description: "Refund an amount to the customer.",
      parameters: schema.obj({ amount: schema.num() }),
      needsApproval: true,
      execute: async (_id, { amount }) => ({ content: [{ type: "text", text: `refunded $${amount}` }], details: { amount } }),
    });
    let parentId: string | undefined;
    let swept: number | undefined;
    const faults = async (phase: FaultPhase, submissionId: string) => {
      if (phase !== "parking" || submissionId !== parentId || swept !== undefined) return;
      // The child settles first (its wake finds the parent running and leaves the outcome for the park).
      const deadline = Date.now() + 10_000;
      for (;;) {
        const children = await store.listChildSubmissions(submissionId);
        if (children.length === 1 && children[0]!.status === "settled") break;
        if (Date.now() > deadline) throw new Error("the child never settled");
        await new Promise((r) => setTimeout(r, 5));
      }
      swept = await expireIdleConversations(store as RetentionSweepStore, Date.now() + 2 * HOUR, HOUR);
    };
    const runtime = createRuntime({
      agents: {
        support: { initialize: () => ({ model: lead.model, streamFn: lead.streamFn, tools: [refund], submissionTimeoutMs: 48 * HOUR }) },
        researcher: { initialize: () => ({ model: researcher.model, streamFn: researcher.streamFn }) },
      },
      store,
      subagents: { support: ["researcher"] },
      subagentLimits: { maxChildWaitMs: 24 * HOUR },
      conversationRetentionMs: HOUR,
      faults,
      onObserverError: () => {},
    });
    await runtime.start();
    try {
      const admitted = await runtime.dispatch({ agent: "support", instance: "shop", message: { kind: "user", body: "refund and check" } });
      parentId = admitted.submissionId;
      const deadline = Date.now() + 10_000;
      let parked = await store.getSubmission(parentId);
      while (parked.status !== "waiting" && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 5));
        parked = await store.getSubmission(parentId);
      }
      expect(swept, "the retention sweep ran and deleted nothing").toBe(0);
      const [child] = await store.listChildSubmissions(parentId);
      expect(child?.status, "the settled child is still there").toBe("settled");
      expect(parked.status).toBe("waiting");
      expect(parked.pendingCalls, "the park delivered the child's outcome: only the person is waited on").toEqual(["call-r"]);

      await runtime.decide({ agent: "support", instance: "shop", submissionId: parentId, callId: "call-r", approved: true });
      expect(await runtime.wait(parentId)).toMatchObject({ status: "succeeded" });
      expect(toolResults(lead.calls[1]!.messages).map((m) => textOf(m))).toEqual(["refunded $250", "order is fine"]);
    } finally {
      await runtime.close();
      await store.close?.();
    }
  });
});
