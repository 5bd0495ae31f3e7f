/**
 * Strict turn order on the wire: after failed turns, the next request carries one user message
 * holding the earlier inputs and the new one, in order, never two user messages in a row (chat
 * templates behind vLLM and others reject that). Checked on the request bodies a scripted
 * provider received, in both wire formats pi-ai speaks.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import { defineTool, schema } from "../../src/index.ts";
import { createMemoryStore } from "../../src/memory/index.ts";
import { startScriptedProvider, type ProviderApi, type ScriptedProvider } from "../support/scripted-provider.ts";

let provider: ScriptedProvider;
beforeAll(async () => {
  provider = await startScriptedProvider();
});
afterAll(() => provider.close());

/** The roles of a request's messages as the wire has them (system prompts excluded). */
function wireRoles(body: { messages: Array<{ role: string }> }): string[] {
  return body.messages.map((m) => m.role).filter((role) => role !== "system" && role !== "developer");
}

/** The texts of a message's content, whether a string or blocks. */
function texts(message: { content: string | Array<{ type: string; text?: string }> }): string[] {
  return typeof message.content === "string" ? [message.content] : message.content.filter((b) => b.type === "text").map((b) => b.text!);
}

describe.each<ProviderApi>(["openai-completions", "anthropic-messages"])("strict alternation on the %s wire", (api) => {
  let runtime: Runtime;
  // A tool during whose call the user steers: the steer is delivered right after the tool results.
  const lookup = defineTool({
    name: "lookup",
    label: "Lookup",
    description: "Looks a term up.",
    parameters: schema.obj({ term: schema.str() }),
    execute: async (_callId, { term }) => {
      await runtime.steer({ agent: "assistant", instance: `${api}-steer`, body: "shorter, please" });
      return { content: [{ type: "text", text: `${term}: a word` }], details: {} };
    },
  });
  beforeAll(async () => {
    runtime = createRuntime({
      store: createMemoryStore(),
      agents: {
        assistant: { initialize: () => ({ ...provider.model(api), systemPrompt: "Be brief.", maxAttempts: 1, tools: [lookup] }) },
      },
    });
    await runtime.start();
  });
  afterAll(() => runtime.close());

  it("after a failed user turn and a failed signal, the next request has one user message with all three inputs in order", async () => {
    const first = provider.requests.length;
    provider.script({ status: 401 }, { status: 401 }, [{ text: "Answering all of it." }]);
    const send = async (message: Parameters<Runtime["dispatch"]>[0]["message"]) => {
      const { submissionId } = await runtime.dispatch({ agent: "assistant", instance: api, message });
      return await runtime.wait(submissionId);
    };
    expect((await send({ kind: "user", body: "first question" })).status).toBe("failed");
    expect((await send({ kind: "signal", body: "build broke", signal: { type: "ci" } })).status).toBe("failed");
    expect((await send({ kind: "user", body: "second question" })).status).toBe("succeeded");

    const bodies = provider.requests.slice(first).map((r) => r.body);
    expect(bodies).toHaveLength(3);
    expect(bodies.map(wireRoles)).toEqual([["user"], ["user"], ["user"]]);
    const last = bodies[2].messages.find((m: { role: string }) => m.role === "user");
    expect(texts(last)).toEqual(["first question", JSON.stringify({ type: "ci", body: "build broke" }), "second question"]);

    // The next exchange goes on alternating: user, assistant, user.
    provider.script([{ text: "Fine." }]);
    expect((await send({ kind: "user", body: "third" })).status).toBe("succeeded");
    expect(wireRoles(provider.requests.at(-1)!.body)).toEqual(["user", "assistant", "user"]);
  });

  it("a steer delivered after tool results goes out in the same user turn as the results where the wire puts results in a user turn", async () => {
    provider.script([{ toolCall: { id: "call_1", name: "lookup", arguments: { term: "turn" } } }], [{ text: "Short." }]);
    const { submissionId } = await runtime.dispatch({ agent: "assistant", instance: `${api}-steer`, message: { kind: "user", body: "define turn" } });
    expect((await runtime.wait(submissionId)).status).toBe("succeeded");
    const body = provider.requests.at(-1)!.body;
    if (api === "anthropic-messages") {
      expect(wireRoles(body)).toEqual(["user", "assistant", "user"]);
      expect(body.messages[2].content.map((b: { type: string }) => b.type)).toEqual(["tool_result", "text"]);
      expect(body.messages[2].content[1].text).toBe("shorter, please");
    } else {
      expect(wireRoles(body)).toEqual(["user", "assistant", "tool", "user"]);
      expect(texts(body.messages.at(-1))).toEqual(["shorter, please"]);
    }
  });
});
