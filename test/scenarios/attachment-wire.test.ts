/**
 * Attachments on the real wire (ADR 0034): an image uploaded over HTTP and referenced in a
 * dispatch is in the request body pi-ai's provider code sends (Anthropic's base64 image block,
 * OpenAI's data URL), beside its label naming digest and size; a text file's text is too; and a
 * later turn of the session still carries the image (the rebuild loads it again).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMemoryStore } from "../../src/memory/index.ts";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import { serve, type ServerHandle } from "../../src/server/server.ts";
import { digestOf, PNG_1x1 } from "../support/attachment-fixtures.ts";
import { startScriptedProvider, type ProviderApi, type ScriptedProvider } from "../support/scripted-provider.ts";

let provider: ScriptedProvider;
beforeAll(async () => {
  provider = await startScriptedProvider();
});
afterAll(() => provider.close());

/** Every content block of the request's user messages. */
function userBlocks(body: { messages: Array<{ role: string; content: unknown }> }): any[] {
  return body.messages.filter((m) => m.role === "user").flatMap((m) => (Array.isArray(m.content) ? m.content : [{ type: "text", text: m.content }]));
}

describe.each<ProviderApi>(["anthropic-messages", "openai-completions"])("attachments on the %s wire", (api) => {
  let runtime: Runtime;
  let server: ServerHandle;
  beforeAll(async () => {
    runtime = createRuntime({
      store: createMemoryStore(),
      agents: { assistant: { initialize: () => ({ ...provider.model(api, { input: ["text", "image"] }), maxAttempts: 1 }) } },
      onObserverError: () => {},
    });
    await runtime.start();
    server = await serve(runtime, { port: 0, hostname: "127.0.0.1", log: () => {}, maxRequestWaitMs: 10_000 });
  });
  afterAll(async () => {
    await server.close();
    await runtime.close();
  });

  it("the image and the text file are in the provider request body, and again in the next turn's", async () => {
    const image = await (await fetch(`${server.url}/attachments`, { method: "POST", headers: { "content-type": "image/png" }, body: PNG_1x1 })).json() as any;
    const notes = await (await fetch(`${server.url}/attachments`, { method: "POST", headers: { "content-type": "text/markdown" }, body: "# Notes\nremember the milk" })).json() as any;
    expect(image.digest).toBe(digestOf(PNG_1x1));
    const first = provider.requests.length;
    provider.script([{ text: "A tiny image." }], [{ text: "Still tiny." }]);
    const send = (body: string, attachments?: unknown[]) =>
      fetch(`${server.url}/agents/assistant/${api}?wait=true`, { method: "POST", body: JSON.stringify({ kind: "user", body, attachments }) });
    expect(((await (await send("what is in the picture?", [image, notes])).json()) as any).status).toBe("succeeded");
    expect(((await (await send("and now?")).json()) as any).status).toBe("succeeded");

    const [one, two] = provider.requests.slice(first);
    for (const request of [one!, two!]) {
      const blocks = userBlocks(request.body);
      const base64 = PNG_1x1.toString("base64");
      if (api === "anthropic-messages") {
        expect(blocks).toContainEqual({ type: "image", source: { type: "base64", media_type: "image/png", data: base64 } });
      } else {
        expect(blocks).toContainEqual(expect.objectContaining({ type: "image_url", image_url: expect.objectContaining({ url: `data:image/png;base64,${base64}` }) }));
      }
      const text = blocks.filter((b) => b.type === "text").map((b) => b.text).join("\n");
      expect(text).toContain(`[attachment ${image.digest} (image/png, ${PNG_1x1.length} bytes)]`);
      expect(text).toContain("remember the milk");
    }
  });
});
