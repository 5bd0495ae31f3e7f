import type { Api, Model } from "@earendil-works/pi-ai";
import { describe, expect, it } from "vitest";
import { foldUserTurns, withStrictTurns } from "../../../src/drive/strict-turns.ts";

describe("foldUserTurns", () => {
  it("Bedrock Converse: tool results then a user text become one user turn, results first", () => {
    const payload = {
      modelId: "m",
      messages: [
        { role: "user", content: [{ text: "go" }] },
        { role: "assistant", content: [{ toolUse: { toolUseId: "t1", name: "lookup", input: {} } }] },
        { role: "user", content: [{ toolResult: { toolUseId: "t1", content: [{ text: "ok" }] } }] },
        { role: "user", content: [{ text: "shorter" }] },
      ],
    };
    const before = structuredClone(payload);
    expect(foldUserTurns("bedrock-converse-stream", payload)).toEqual({
      modelId: "m",
      messages: [
        payload.messages[0],
        payload.messages[1],
        { role: "user", content: [{ toolResult: { toolUseId: "t1", content: [{ text: "ok" }] } }, { text: "shorter" }] },
      ],
    });
    expect(payload).toEqual(before);
  });

  it("Anthropic: string content becomes a text block when folded", () => {
    const payload = { messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "ok" }] }, { role: "user", content: "shorter" }] };
    expect(foldUserTurns("anthropic-messages", payload)).toEqual({
      messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "ok" }, { type: "text", text: "shorter" }] }],
    });
  });

  it("Gemini: user contents' parts are folded", () => {
    const payload = { contents: [{ role: "user", parts: [{ functionResponse: { name: "f" } }] }, { role: "user", parts: [{ text: "more" }] }, { role: "model", parts: [{ text: "ok" }] }] };
    expect(foldUserTurns("google-generative-ai", payload)).toEqual({
      contents: [{ role: "user", parts: [{ functionResponse: { name: "f" } }, { text: "more" }] }, { role: "model", parts: [{ text: "ok" }] }],
    });
  });

  it("leaves alternating requests, other APIs and odd payloads alone", () => {
    expect(foldUserTurns("anthropic-messages", { messages: [{ role: "user", content: "a" }, { role: "assistant", content: "b" }] })).toBeUndefined();
    // Chat Completions: a tool message between them is its own role; nothing to fold.
    expect(foldUserTurns("openai-completions", { messages: [{ role: "user", content: "a" }, { role: "user", content: "b" }] })).toBeUndefined();
    expect(foldUserTurns("anthropic-messages", null)).toBeUndefined();
    expect(foldUserTurns("anthropic-messages", { messages: "nope" })).toBeUndefined();
  });
});

describe("withStrictTurns", () => {
  const model = { api: "anthropic-messages" } as Model<Api>;
  const split = () => ({ messages: [{ role: "user", content: "a" }, { role: "user", content: "b" }] });

  it("runs the caller's onPayload first, then folds what it returned", async () => {
    const options = withStrictTurns({
      maxTokens: 5,
      onPayload: (payload) => ({ ...(payload as object), tagged: true }),
    });
    expect(options.maxTokens).toBe(5);
    expect(await options.onPayload!(split(), model)).toEqual({ tagged: true, messages: [{ role: "user", content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] }] });
  });

  it("answers undefined (unchanged) when nothing changes", async () => {
    expect(await withStrictTurns(undefined).onPayload!({ messages: [{ role: "user", content: "a" }] }, model)).toBeUndefined();
  });
});
