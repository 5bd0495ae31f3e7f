/** The local model: the bench-only stamp (bench/http.ts measures emit → receive with it), and its calls of the agent's tools. */
import { createInitialSystemMessage, type AssistantMessageEvent, type Message } from "@earendil-works/pi-ai";
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

/** Issue 37 point 3: the keyless model calls any of the agent's own tools. */
describe("localModel calls the agent's own tools", () => {
  const refund = {
    name: "refund",
    description: "Refund an amount.",
    parameters: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] },
  };
  const inventory = { name: "inventory", description: "Counts the stock.", parameters: { type: "object", properties: {} } };
  const system = createInitialSystemMessage("You help.", [refund, inventory]) as Message;

  async function answer(messages: Message[]) {
    const { model, streamFn } = localModel();
    const stream = await streamFn(model, ctx(messages));
    for await (const _ of stream as AsyncIterable<AssistantMessageEvent>) void _;
    return (await stream.result()) as { stopReason: string; content: { type: string; text?: string }[] };
  }

  it("`/refund {json}` calls refund with those arguments, then names the result", async () => {
    const first = await answer([system, user('/refund {"amount": 240}')]);
    expect(first.stopReason).toBe("toolUse");
    expect(first.content).toEqual([{ type: "toolCall", id: "call_refund_1", name: "refund", arguments: { amount: 240 } }]);
    const second = await answer([
      system,
      user('/refund {"amount": 240}'),
      first as unknown as Message,
      { role: "toolResult", toolCallId: "call_refund_1", toolName: "refund", content: [{ type: "text", text: "refunded $240" }], isError: false, timestamp: 0 },
    ]);
    expect(second.content).toEqual([{ type: "text", text: "`refund` returned: refunded $240" }]);
  });

  it("says a failed call failed (a denied approval)", async () => {
    const first = await answer([system, user('/refund {"amount": 240}')]);
    const second = await answer([
      system,
      user('/refund {"amount": 240}'),
      first as unknown as Message,
      { role: "toolResult", toolCallId: "call_refund_1", toolName: "refund", content: [{ type: "text", text: "denied by a reviewer: no" }], isError: true, timestamp: 0 },
    ]);
    expect(second.content).toEqual([{ type: "text", text: "`refund` failed: denied by a reviewer: no" }]);
  });

  it("invalid JSON or an unknown tool: a text saying so, listing the tools", async () => {
    const bad = await answer([system, user("/refund {amount: 240}")]);
    expect(bad.stopReason).toBe("stop");
    expect(bad.content[0]!.text).toMatch(/^The arguments of `refund` are not JSON \(.+\)\./);
    expect(bad.content[0]!.text).toContain("This agent's tools: `/refund` (requires amount), `/inventory`.");
    const notObject = await answer([system, user("/refund 240")]);
    expect(notObject.content[0]!.text).toMatch(/^The arguments of `refund` must be a JSON object/);
    const unknown = await answer([system, user('/refnd {"amount": 1}')]);
    expect(unknown.content[0]!.text).toBe("There is no tool `refnd`. This agent's tools: `/refund` (requires amount), `/inventory`.");
    const none = await answer([user("/refund")]);
    expect(none.content[0]!.text).toBe("There is no tool `refund`. This agent has no tools.");
  });

  it("a plain message naming a tool without required arguments calls it; one with required arguments is not guessed", async () => {
    const named = await answer([system, user("How is the Inventory today?")]);
    expect(named.content).toEqual([{ type: "toolCall", id: "call_inventory_1", name: "inventory", arguments: {} }]);
    const partOfWord = await answer([system, user("inventorying")]);
    expect(partOfWord.content).toEqual([{ type: "text", text: "You said: inventorying" }]);
    const required = await answer([system, user("please refund me")]);
    expect(required.content).toEqual([{ type: "text", text: "You said: please refund me" }]);
  });
});
