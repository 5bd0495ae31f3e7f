/** The bench-only stamp of the local model (bench/http.ts measures emit → receive with it). */
import type { AssistantMessageEvent, Message } from "@earendil-works/pi-ai";
import { describe, expect, it } from "vitest";
import { localModel } from "../../../src/agent/local-model.ts";

const ctx = (messages: Message[]) => ({ messages }) as never;
const user = (text: string): Message => ({ role: "user", content: text, timestamp: 0 });

describe("localModel stampAfterMs", () => {
  it("starts a text reply with its emit time, taken after the wait", async () => {
    const { model, streamFn } = localModel({ stampAfterMs: 5 });
    const before = performance.timeOrigin + performance.now();
    const deltas: string[] = [];
    for await (const e of (await streamFn(model, ctx([user("hello")]))) as AsyncIterable<AssistantMessageEvent>) {
      if (e.type === "text_delta") deltas.push(e.delta);
    }
    const text = deltas.join("");
    const m = /^@(\d+\.\d{3});You said: hello$/.exec(text);
    expect(m, text).not.toBeNull();
    expect(Number(m![1]) - before).toBeGreaterThanOrEqual(4);
  });

  it("leaves a tool call unstamped", async () => {
    const { model, streamFn } = localModel({ stampAfterMs: 1 });
    const stream = await streamFn(model, ctx([user("what time is it?")]));
    for await (const _ of stream as AsyncIterable<AssistantMessageEvent>) void _;
    const final = (await stream.result()) as { content: unknown[] };
    expect(final.content).toEqual([{ type: "toolCall", id: "call_clock_0", name: "clock", arguments: {} }]);
  });
});
