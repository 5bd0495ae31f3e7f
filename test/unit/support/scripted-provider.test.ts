/**
 * The scripted provider against pi-ai's real provider code: what a test scripts is what pi-ai
 * parses from the wire, for both formats.
 */
import type { AssistantMessage } from "@earendil-works/pi-ai";
import { normalizeContext } from "@earendil-works/pi-ai/utils/transcript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedProvider, type ProviderApi, type ScriptedProvider } from "../../support/scripted-provider.ts";

let provider: ScriptedProvider;
beforeAll(async () => {
  provider = await startScriptedProvider();
});
afterAll(() => provider.close());

const context = normalizeContext({ systemPrompt: "Be brief.", messages: [{ role: "user", content: "hi", timestamp: 0 }] });

async function call(api: ProviderApi): Promise<AssistantMessage> {
  const { model, streamFn } = provider.model(api);
  return await (await streamFn(model, context, {})).result();
}

describe.each<ProviderApi>(["openai-completions", "anthropic-messages"])("scripted provider, %s", (api) => {
  it("streams text in deltas with the scripted usage, and records the request", async () => {
    const before = provider.requests.length;
    provider.script({ blocks: [{ text: "Hello, " }, { text: "world." }], usage: { input: 42, output: 7 } });
    const message = await call(api);
    expect(message.stopReason).toBe("stop");
    expect(message.content.filter((b) => b.type === "text").map((b) => b.text).join("")).toBe("Hello, world.");
    expect(message.usage).toMatchObject({ input: 42, output: 7 });
    expect(provider.requests.length).toBe(before + 1);
    const request = provider.requests.at(-1)!;
    expect(request.api).toBe(api);
    expect(request.body.stream).toBe(true);
    expect(JSON.stringify(request.body.messages)).toContain('"hi"');
  });

  it("streams thinking and a tool call whose arguments are split over chunks", async () => {
    provider.script([{ thinking: "They want the weather." }, { toolCall: { id: "call_1", name: "weather", arguments: { city: "Oslo", days: 3 } } }]);
    const message = await call(api);
    expect(message.stopReason).toBe("toolUse");
    expect(message.content.find((b) => b.type === "thinking")).toMatchObject({ thinking: "They want the weather." });
    expect(message.content.find((b) => b.type === "toolCall")).toMatchObject({ id: "call_1", name: "weather", arguments: { city: "Oslo", days: 3 } });
  });

  it("answers HTTP errors once each (no hidden SDK retries): 429 with Retry-After, 401, 500", async () => {
    for (const status of [429, 401, 500]) {
      const before = provider.requests.length;
      provider.script({ status, headers: status === 429 ? { "retry-after": "1" } : {} });
      const message = await call(api);
      expect(message.stopReason).toBe("error");
      expect(message.errorMessage).toContain(String(status));
      expect(provider.requests.length - before).toBe(1);
    }
  });

  it("a dropped stream, an in-stream error and an unscripted request end as errors", async () => {
    provider.script([{ text: "partial answ" }, { drop: true }], { refuse: true });
    expect((await call(api)).stopReason).toBe("error");
    expect((await call(api)).stopReason).toBe("error");
    provider.script([{ text: "partial" }, { error: "Overloaded" }]);
    const inStream = await call(api);
    expect(inStream.stopReason).toBe("error");
    expect(inStream.errorMessage).toContain("Overloaded");
    expect(provider.remaining()).toBe(0);
    const unscripted = await call(api);
    expect(unscripted.errorMessage).toMatch(/no reply scripted for request #\d+/);
  });

  it("holds a stream until the test lets it go on", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    provider.script([{ text: "before " }, { until: held }, { pause: 5 }, { text: "after" }]);
    const { model, streamFn } = provider.model(api);
    const stream = await streamFn(model, context, {});
    const seen: string[] = [];
    let released = false;
    for await (const event of stream) {
      if (event.type !== "text_delta") continue;
      seen.push(`${released ? "+" : "-"}${event.delta}`);
      if (seen.length === 2) setTimeout(() => ((released = true), release()), 50);
    }
    // "before " is two deltas; nothing of "after" arrives until the promise settles.
    expect(seen).toEqual(["-befo", "-re ", "+afte", "+r"]);
  });

  it("computes a reply from the request", async () => {
    provider.script((request, index) => [{ text: `#${index} saw ${request.body.messages.length} messages` }]);
    const message = await call(api);
    expect(message.content[0]).toMatchObject({ type: "text", text: expect.stringMatching(/^#\d+ saw \d messages$/) });
  });
});
