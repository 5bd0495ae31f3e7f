/**
 * Who said it (ADR 0043): through `Runtime.as(principal)` the caller's id goes on its message's
 * record and submission, reaches the agent's `initialize`, is inherited by a subagent, and is
 * recorded on an approval's decision; a server without authentication (`as()`) records none, and
 * a request body cannot claim one.
 */
import { afterEach, describe, expect, it } from "vitest";
import { defineTool } from "../../../src/agent/define-tool.ts";
import { scriptedModel, type ScriptStep } from "../../../src/agent/scripted-model.ts";
import * as schema from "../../../src/agent/tool-schema.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import { createApp } from "../../../src/http/app.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { lastUserText, textOf } from "../../support/model-messages.ts";

let runtime: Runtime | undefined;
afterEach(async () => {
  await runtime?.close();
  runtime = undefined;
});

/** `lead` asks `helper` through task for "delegate", calls `refund` (needs approval) for "refund"; both record who they run for. */
function start() {
  const initializedFor: Record<string, (string | undefined)[]> = { lead: [], helper: [] };
  // The first call decides from the message; every later one (after the tool's result) is done.
  const first: ScriptStep = (messages, call) => {
    const text = lastUserText(messages);
    if (text.includes("delegate")) return [{ toolCall: { id: `t-${call}`, name: "task", arguments: { agent: "helper", prompt: "help" } } }];
    if (text.includes("refund")) return [{ toolCall: { id: `r-${call}`, name: "refund", arguments: { amount: 500 } } }];
    return [{ text: `echo ${text}` }];
  };
  const lead = scriptedModel([first, ...Array.from({ length: 10 }, (): ScriptStep => () => [{ text: "done" }])]);
  const helper = scriptedModel(Array.from({ length: 50 }, () => (m: unknown) => [{ text: `helped: ${textOf((m as never[]).at(-1)!)}` }]));
  const refund = defineTool({
    name: "refund",
    label: "Refund",
    description: "refund",
    parameters: schema.obj({ amount: schema.num() }),
    needsApproval: true,
    execute: async () => ({ content: [{ type: "text", text: "refunded" }], details: {} }),
  });
  runtime = createRuntime({
    store: createMemoryStore(),
    agents: {
      lead: {
        initialize: ({ principalId }) => {
          initializedFor.lead!.push(principalId);
          return { model: lead.model, streamFn: lead.streamFn, tools: [refund] };
        },
      },
      helper: {
        initialize: ({ principalId }) => {
          initializedFor.helper!.push(principalId);
          return { model: helper.model, streamFn: helper.streamFn };
        },
      },
    },
    subagents: { lead: ["helper"] },
    onObserverError: () => {},
  });
  return { runtime, initializedFor };
}

const records = async (r: Runtime, conversationId: string): Promise<ConversationRecord[]> => r.records(conversationId);

describe("who said it", () => {
  it("the caller's id is on its message, its submission, the agent's initialize, and a subagent's run", async () => {
    const { runtime: r, initializedFor } = start();
    await r.start();
    const alice = r.as({ id: "alice" });
    const admitted = await alice.dispatch({ agent: "lead", instance: "alice", message: { kind: "user", body: "please delegate" } });
    const settled = await alice.wait(admitted.submissionId);
    expect(settled.status, JSON.stringify(settled)).toBe("succeeded");
    const log = await records(r, admitted.conversationId);
    expect(log.find((x) => x.kind === "user_message")?.payload).toMatchObject({ body: "please delegate", principalId: "alice" });
    const page = await r.listSubmissions({ agent: "lead", instance: "alice" });
    expect(page.submissions[0]?.principalId).toBe("alice");
    expect(initializedFor.lead).toContain("alice");
    expect(initializedFor.helper, "the child runs as its parent's principal").toEqual(expect.arrayContaining(["alice"]));
    expect(initializedFor.helper!.every((p) => p === "alice")).toBe(true);
  });

  it("an approval records who decided", async () => {
    const { runtime: r } = start();
    await r.start();
    const admitted = await r.as({ id: "alice" }).dispatch({ agent: "lead", instance: "alice", message: { kind: "user", body: "refund please" } });
    let pending: Awaited<ReturnType<Runtime["pendingApprovals"]>> = [];
    for (let i = 0; i < 200 && pending.length === 0; i++) {
      pending = await r.pendingApprovals({ agent: "lead", instance: "alice" });
      if (pending.length === 0) await new Promise((res) => setTimeout(res, 25));
    }
    const decision = await r.as({ id: "alice-manager", roles: ["operator"] }).decide({ agent: "lead", instance: "alice", submissionId: admitted.submissionId, callId: pending[0]!.callId, approved: true });
    expect(decision.decidedBy).toBe("alice-manager");
    await r.wait(admitted.submissionId);
    const decided = (await records(r, admitted.conversationId)).find((x) => x.kind === "approval_decided");
    expect(decided?.payload).toMatchObject({ approved: true, decidedBy: "alice-manager" });
  });

  it("without authentication nothing is recorded, and a request body cannot claim a principal", async () => {
    const { runtime: r } = start();
    await r.start();
    const app = createApp(r, { log: () => {} });
    const res = await app.request("/agents/lead/x?wait=true", { method: "POST", body: JSON.stringify({ kind: "user", body: "hi", principalId: "mallory" }) });
    expect(res.status).toBe(200);
    const { conversationId } = (await res.json()) as { conversationId: string };
    const message = (await records(r, conversationId)).find((x) => x.kind === "user_message");
    expect(message?.payload).toEqual({ body: "hi" });
  });
});
