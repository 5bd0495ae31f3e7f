/**
 * `HarnessChatTransport` driven by the AI SDK's own `Chat` (the class behind `useChat`, headless)
 * against a served runtime over HTTP: a reply streams as UI message parts (a tool call, text,
 * the settlement as a data part); a second chat (a reloaded page) loads the history and resumes
 * mid-reply with the text exactly once; `stop()` cancels the submission; regenerate is refused.
 */
import { Chat } from "@ai-sdk/react";
import type { StreamFn } from "@earendil-works/pi-agent-core";
import type { Message } from "@earendil-works/pi-ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HarnessChatTransport, type HarnessUIMessage } from "../../../src/ai-sdk/index.ts";
import { createClient, type HarnessClient } from "../../../src/client/index.ts";
import type { AgentDefinition } from "../../../src/agent/agent-definition.ts";
import { serve, type ServerHandle } from "../../../src/server/server.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import { clockTool } from "../../../src/agent/clock-tool.ts";
import { localModel } from "../../../src/agent/local-model.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";

/** The keyless model; a message with "slow" in it streams a character every 25 ms. */
function keyless(): AgentDefinition {
  const fast = localModel();
  const slow = localModel({ delayMs: 25, chunkSize: 1 });
  const streamFn: StreamFn = (m, context, options) => (/slow/.test(lastUserText(context.messages)) ? slow : fast).streamFn(m, context, options);
  return { initialize: () => ({ model: fast.model, streamFn, tools: [clockTool()] }) };
}

function lastUserText(messages: readonly Message[]): string {
  const m = [...messages].reverse().find((x) => x.role === "user");
  if (!m || m.role !== "user") return "";
  return typeof m.content === "string" ? m.content : m.content.map((c) => (c.type === "text" ? c.text : "")).join("");
}

let runtime: Runtime;
let server: ServerHandle;
let client: HarnessClient;

beforeAll(async () => {
  runtime = createRuntime({ agents: { assistant: keyless() }, store: createMemoryStore(), flushPolicy: { bytes: 0, intervalMs: 0 } });
  await runtime.start();
  server = await serve(runtime, { port: 0, log: () => {}, retryMs: 50 });
  client = createClient({ baseUrl: server.url });
});
afterAll(async () => {
  await server?.close();
  await runtime?.close();
});

const transportFor = (instance: string) => new HarnessChatTransport({ client, agent: "assistant", instance });
const textOf = (message: HarnessUIMessage | undefined) => (message?.parts ?? []).map((p) => (p.type === "text" ? p.text : "")).join("");
/** The text of the chat's reply so far ("" while the last message is the user's). */
const replyOf = (chat: Chat<HarnessUIMessage>) => (chat.lastMessage?.role === "assistant" ? textOf(chat.lastMessage) : "");
const until = (check: () => boolean, ms = 15_000) =>
  new Promise<void>((resolve, reject) => {
    const deadline = Date.now() + ms;
    const tick = () => (check() ? resolve() : Date.now() > deadline ? reject(new Error("until: timed out")) : setTimeout(tick, 5));
    tick();
  });

describe("HarnessChatTransport with the AI SDK's Chat", () => {
  it("sends a message and streams the reply: a tool call with its output, the text, the settlement", async () => {
    const chat = new Chat<HarnessUIMessage>({ id: "s1", transport: transportFor("chat-1") });
    const seen: string[] = [];
    chat["~registerMessagesCallback"](() => seen.push(textOf(chat.lastMessage)));
    await chat.sendMessage({ text: "what time is it?" });
    expect(chat.status).toBe("ready");
    expect(chat.error).toBeUndefined();
    const [user, reply] = chat.messages;
    expect(user).toMatchObject({ role: "user", parts: [{ type: "text", text: "what time is it?" }] });
    expect(reply!.role).toBe("assistant");
    expect(reply!.id).toBe(`assistant:${user!.id}`); // the user message's id is the dispatch id
    const types = reply!.parts.map((p) => p.type);
    expect(types).toEqual(["step-start", "dynamic-tool", "step-start", "text", "data-settlement"]);
    const tool = reply!.parts[1] as Extract<HarnessUIMessage["parts"][number], { type: "dynamic-tool" }>;
    expect(tool).toMatchObject({ toolName: "clock", toolCallId: "call_clock_1", state: "output-available", providerExecuted: true });
    expect((tool.output as { text: string }).text).toMatch(/^\d{4}-/);
    expect(textOf(reply)).toBe(`The time is ${(tool.output as { text: string }).text}.`);
    expect(reply!.parts.at(-1)).toMatchObject({ type: "data-settlement", data: { status: "succeeded", submissionId: user!.id } });
    expect(reply!.metadata).toMatchObject({ submissionId: user!.id, status: "succeeded" });
    // It streamed: the text was seen growing, never shrinking.
    const texts = seen.filter((t) => t !== "" && t !== "what time is it?");
    expect(texts.length).toBeGreaterThan(1);
    for (let i = 1; i < texts.length; i++) expect(texts[i]!.startsWith(texts[i - 1]!)).toBe(true);

    // The history reads back the same messages.
    expect(await transportFor("chat-1").loadMessages("s1")).toEqual(chat.messages);
  });

  it("a second chat (a reloaded page) loads the history, resumes mid-reply, and shows the text exactly once", async () => {
    const first = new Chat<HarnessUIMessage>({ id: "s2", transport: transportFor("chat-2") });
    await first.sendMessage({ text: "hello" });
    const body = "please answer slowly, one character after another";
    const sending = first.sendMessage({ text: body });
    await until(() => replyOf(first).length > 10);
    // Another page (a reload) while the first still reads: it sees the same conversation.
    const reloaded = transportFor("chat-2");
    const history = await reloaded.loadMessages("s2");
    expect(history.map((m) => [m.role, textOf(m)])).toEqual([
      ["user", "hello"],
      ["assistant", "You said: hello"],
      ["user", body],
    ]);
    const second = new Chat<HarnessUIMessage>({ id: "s2", transport: reloaded, messages: history });
    const partialAtResume = textOf(first.lastMessage);
    await second.resumeStream();
    expect(second.status).toBe("ready");
    expect(textOf(second.lastMessage)).toBe(`You said: ${body}`);
    expect(second.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(partialAtResume.length).toBeLessThan(`You said: ${body}`.length);
    await sending;
    expect(textOf(first.lastMessage)).toBe(`You said: ${body}`);
    // Nothing is running now: a resume finds no stream.
    const idle = new Chat<HarnessUIMessage>({ id: "s2", transport: transportFor("chat-2"), messages: second.messages });
    await idle.resumeStream();
    expect(idle.messages).toEqual(second.messages);
  });

  it("stop() cancels the submission; the partial reply stays", async () => {
    const chat = new Chat<HarnessUIMessage>({ id: "s3", transport: transportFor("chat-3") });
    const sending = chat.sendMessage({ text: "a long and slow reply, please, with many many words in it" });
    await until(() => replyOf(chat).length > 5);
    await chat.stop();
    await sending;
    expect(chat.status).toBe("ready");
    const submissionId = chat.messages[0]!.id;
    const outcome = await client.waitForSettled("assistant", "chat-3", submissionId, { session: "s3", signal: AbortSignal.timeout(15_000) });
    expect(outcome).toMatchObject({ status: "failed", errorCode: "cancelled", error: "cancelled: stopped by the user" });
    // The log has less than the whole reply.
    const history = await transportFor("chat-3").loadMessages("s3");
    expect(textOf(history[1]).length).toBeLessThan("You said: a long and slow reply, please, with many many words in it".length);
    expect(history[1]!.parts.at(-1)).toMatchObject({ type: "data-settlement", data: { status: "failed", errorCode: "cancelled" } });
  });

  it("refuses to regenerate (the log is append-only)", async () => {
    const chat = new Chat<HarnessUIMessage>({ id: "s4", transport: transportFor("chat-4") });
    await chat.sendMessage({ text: "hi" });
    await chat.regenerate();
    expect(chat.status).toBe("error");
    expect(chat.error?.message).toMatch(/regenerate is not supported/);
  });
});
