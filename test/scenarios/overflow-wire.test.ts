/**
 * Issue 15's overflow on the real wire: pi-ai's OpenAI-compatible and Anthropic provider code
 * against a local scripted server that refuses a request too long for its window the way each
 * vendor does (HTTP 400 with its error body). An input that alone cannot fit settles
 * `context_overflow`, stays in the log, and the session's next submission succeeds without it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentDefinition } from "../../src/agent/agent-definition.ts";
import { localModel } from "../../src/agent/local-model.ts";
import { startScriptedProvider, type ProviderApi, type ProviderStep, type ScriptedProvider } from "../support/scripted-provider.ts";
import { allRecords, startTestServer } from "../support/runtime-kit.ts";

/** Characters of request body the scripted server accepts. */
const WINDOW_CHARS = 8_000;

const OVERFLOW_BODY: Record<ProviderApi, unknown> = {
  "openai-completions": {
    error: {
      message: "This model's maximum context length is 2000 tokens. However, your messages resulted in 6000 tokens. Please reduce the length of the messages.",
      type: "invalid_request_error",
      code: "context_length_exceeded",
    },
  },
  "anthropic-messages": { type: "error", error: { type: "invalid_request_error", message: "prompt is too long: 6000 tokens > 2000 maximum" } },
};

let provider: ScriptedProvider;
beforeAll(async () => {
  provider = await startScriptedProvider();
});
afterAll(() => provider.close());

describe.each<ProviderApi>(["openai-completions", "anthropic-messages"])("overflow on the wire, %s", (api) => {
  it("a single overflowing input settles context_overflow; the next submission succeeds without it", async () => {
    const windowed: ProviderStep = (request) =>
      JSON.stringify(request.body).length > WINDOW_CHARS ? { status: 400, body: OVERFLOW_BODY[api] } : [{ text: "ok" }];
    provider.script(...Array.from({ length: 6 }, () => windowed));
    const { model, streamFn } = provider.model(api, { contextWindow: 200_000 });
    const summarizer = localModel();
    const definition: AgentDefinition = {
      initialize: () => ({ model, streamFn, compaction: { model: summarizer.model, streamFn: summarizer.streamFn } }),
    };
    const h = await startTestServer({ agents: { assistant: definition } });
    const address = { agent: "assistant", instance: `wire-${api}` };
    const ask = async (body: string) => h.runtime.wait((await h.runtime.dispatch({ ...address, message: { kind: "user", body } })).submissionId);
    const first = provider.requests.length;

    expect(await ask("hello")).toMatchObject({ status: "succeeded", usage: { input: expect.any(Number), output: expect.any(Number) } });
    const huge = `HUGE ${"y".repeat(10_000)}`;
    const failed = await ask(huge);
    expect(failed).toMatchObject({ status: "failed", errorCode: "context_overflow", excludedFromContext: true });
    expect(failed.error).toMatch(/^context overflow with nothing left to compact: /);
    expect(await ask("and now?")).toMatchObject({ status: "succeeded" });

    const sent = provider.requests.slice(first).map((r) => JSON.stringify(r.body.messages));
    expect(sent.at(-1)).not.toContain("HUGE");
    expect(sent.at(-1)).toContain("and now?");
    // hello; the huge input, refused; after compacting "hello" away, refused again; and now?
    expect(sent.filter((s) => s.includes("HUGE"))).toHaveLength(2);
    const records = await allRecords(h.store, (await h.runtime.conversation(address)).id);
    expect(records.some((r) => r.kind === "user_message" && r.payload.body === huge)).toBe(true);
    await h.runtime.close();
  });
});
