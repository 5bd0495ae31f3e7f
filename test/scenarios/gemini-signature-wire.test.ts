/**
 * Thought signatures across a crash on the real wire (issues 9 and 15): pi-ai's Google provider
 * code against a scripted Gemini 3 that, like the real one, refuses a history whose function call
 * lost its `thoughtSignature`. The process dies after the tool ran (the fault seam's `tool_ran`);
 * the next process rebuilds the run from the log, and the replayed call must carry the signature
 * (stored on its `assistant_tool_call` record) for the run to finish.
 */
import type { AgentTool } from "@earendil-works/pi-agent-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentDefinition } from "../../src/agent/agent-definition.ts";
import { allRecords, startTestServer } from "../support/runtime-kit.ts";
import { MISSING_SIGNATURE, startScriptedGemini, type ScriptedGemini } from "../support/scripted-gemini.ts";

const SIGNATURE = "c2lnbmVkLXRob3VnaHQtb2YtdGhlLW1vZGVs"; // base64, as Gemini's are

let gemini: ScriptedGemini;
beforeAll(async () => {
  gemini = await startScriptedGemini();
});
afterAll(() => gemini.close());

const lookup: AgentTool<any> = {
  name: "lookup",
  label: "lookup",
  description: "Looks something up.",
  parameters: { type: "object", properties: { q: { type: "string" } } },
  execute: async () => ({ content: [{ type: "text", text: "found: 42" }], details: {} }),
};

describe("thought signatures on the Gemini wire", () => {
  it("a run crashed after its tool ran recovers: the replayed function call carries its signature, and the run succeeds", async () => {
    const { model, streamFn } = gemini.model();
    const definition: AgentDefinition = { initialize: () => ({ model, streamFn, tools: [lookup] }) };
    gemini.script(
      [{ text: "Let me look. " }, { functionCall: { id: "call-1", name: "lookup", args: { q: "answer" } }, thoughtSignature: SIGNATURE }],
      [{ text: "The answer is 42." }],
    );
    let crashed!: () => void;
    const atCrash = new Promise<void>((resolve) => (crashed = resolve));
    // The first process stops dead once the tool ran, before its outcome is recorded.
    const h = await startTestServer({
      agents: { assistant: definition },
      faults: (phase) => {
        if (phase !== "tool_ran") return;
        crashed();
        return new Promise<never>(() => {});
      },
    });
    const address = { agent: "assistant", instance: "gemini" };
    const { submissionId, conversationId } = await h.runtime.dispatch({ ...address, message: { kind: "user", body: "what is the answer?" } });
    await atCrash;
    await h.runtime.close({ abandon: true });

    const stored = (await allRecords(h.store, conversationId)).find((r) => r.kind === "assistant_tool_call");
    expect(stored?.payload).toMatchObject({ callId: "call-1", toolName: "lookup", thoughtSignature: SIGNATURE });

    // The next process: the lease runs out, the sweep requeues, a fresh attempt replays the call.
    const runtime = await h.restart();
    const settled = runtime.wait(submissionId);
    await h.clock.advance(31_000);
    await h.clock.advance(5_000);
    expect(await settled).toMatchObject({ status: "succeeded" });

    expect(gemini.requests).toHaveLength(2);
    const replayed = gemini.requests[1].contents as { role: string; parts: Record<string, unknown>[] }[];
    const call = replayed.flatMap((c) => c.parts).find((p) => p.functionCall);
    expect(call).toMatchObject({ functionCall: { name: "lookup", args: { q: "answer" }, id: "call-1" }, thoughtSignature: SIGNATURE });
    expect(replayed.flatMap((c) => c.parts).some((p) => p.functionResponse)).toBe(true);
    const records = await allRecords(h.store, conversationId);
    expect(records.filter((r) => r.kind === "submission_settled").map((r) => r.payload)).toMatchObject([{ status: "succeeded" }]);
    await runtime.close();
  });

  it("the scripted Gemini refuses a replayed call without its signature (the check is live)", async () => {
    const { model, streamFn } = gemini.model();
    const before = gemini.requests.length;
    const events = streamFn(model, {
      messages: [
        { role: "user", content: "q", timestamp: 0 },
        {
          role: "assistant",
          content: [{ type: "toolCall", id: "call-x", name: "lookup", arguments: {} }],
          api: model.api,
          provider: model.provider,
          model: model.id,
          usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
          stopReason: "toolUse",
          timestamp: 0,
        },
        { role: "toolResult", toolCallId: "call-x", toolName: "lookup", content: [{ type: "text", text: "r" }], isError: false, timestamp: 0 },
      ],
    } as unknown as Parameters<typeof streamFn>[1]);
    const result = await (await events).result();
    expect(result.stopReason).toBe("error");
    expect(result.errorMessage).toContain(MISSING_SIGNATURE);
    expect(gemini.requests.length).toBe(before + 1);
  });
});
