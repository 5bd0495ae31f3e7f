/**
 * `LiveConversation` (the store behind `useConversation`) against a served runtime: send and watch
 * the reply stream in; a second store opened mid-reply (a reloaded page) ends with the reply
 * once; cancel stops the submission in flight; steer and compact; an empty session is idle.
 */
import type { StreamFn } from "@earendil-works/pi-agent-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LiveConversation, createClient, type LiveConversationSnapshot, type HarnessClient } from "../../../src/client/index.ts";
import type { AssistantItem } from "../../../src/client/message-view.ts";
import { serve, type ServerHandle } from "../../../src/server/server.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import { clockTool } from "../../../src/agent/clock-tool.ts";
import { localModel } from "../../../src/agent/local-model.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";

let runtime: Runtime;
let server: ServerHandle;
let client: HarnessClient;

beforeAll(async () => {
  const fast = localModel();
  const slow = localModel({ delayMs: 25, chunkSize: 1 });
  const streamFn: StreamFn = (m, context, options) => (JSON.stringify(context.messages.at(-1)).includes("slow") ? slow : fast).streamFn(m, context, options);
  runtime = createRuntime({
    agents: { assistant: { initialize: () => ({ model: fast.model, streamFn, tools: [clockTool()] }) } },
    store: createMemoryStore(),
    flushPolicy: { bytes: 0, intervalMs: 0 },
  });
  await runtime.start();
  server = await serve(runtime, { port: 0, log: () => {}, retryMs: 50 });
  client = createClient({ baseUrl: server.url });
});
afterAll(async () => {
  await server?.close();
  await runtime?.close();
});

function open(instance: string): LiveConversation {
  const conversation = new LiveConversation({ client, agent: "assistant", instance });
  conversation.start();
  return conversation;
}

function until(conversation: LiveConversation, check: (s: LiveConversationSnapshot) => boolean, ms = 15_000): Promise<LiveConversationSnapshot> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      unsubscribe();
      reject(new Error(`until: timed out at ${JSON.stringify(conversation.getSnapshot())}`));
    }, ms);
    const look = () => {
      const s = conversation.getSnapshot();
      if (!check(s)) return;
      clearTimeout(timer);
      unsubscribe();
      resolve(s);
    };
    const unsubscribe = conversation.subscribe(look);
    look();
  });
}

const replies = (s: LiveConversationSnapshot) => s.messages.filter((m): m is AssistantItem => m.kind === "assistant").map((m) => m.text);
const settledCount = (s: LiveConversationSnapshot) => s.messages.filter((m) => m.kind === "settled").length;

describe("LiveConversation", () => {
  it("an empty session is idle; a sent message's reply streams in and settles", async () => {
    const conversation = open("conv-1");
    await until(conversation, (s) => s.status === "idle");
    expect(conversation.getSnapshot().messages).toEqual([]);
    await conversation.send("what time is it?");
    const done = await until(conversation, (s) => settledCount(s) === 1 && s.status === "idle");
    expect(done.messages.map((m) => m.kind)).toEqual(["user", "tool", "assistant", "settled"]);
    expect(replies(done)[0]).toMatch(/^The time is /);
    expect(done.running).toBeUndefined();
    conversation.stop();
  });

  it("a second store opened mid-reply (a reload) carries on and shows the reply once; cancel stops the next one", async () => {
    const first = open("conv-2");
    await first.send("answer slowly please, letter by letter");
    await until(first, (s) => (replies(s)[0] ?? "").length > 8);
    const reloaded = open("conv-2");
    const loaded = await until(reloaded, (s) => settledCount(s) === 1);
    expect(replies(loaded)).toEqual(["You said: answer slowly please, letter by letter"]);
    expect(loaded.messages.filter((m) => m.kind === "user")).toHaveLength(1);
    first.stop();

    await reloaded.send("and another slow one, with quite a few words");
    const streaming = await until(reloaded, (s) => s.running !== undefined && (replies(s)[1] ?? "").length > 3);
    expect(streaming.status).toBe("running");
    expect(await reloaded.cancel("enough")).toMatchObject({ submissionId: streaming.running });
    const cancelled = await until(reloaded, (s) => settledCount(s) === 2 && s.status === "idle");
    expect(cancelled.messages.at(-1)).toMatchObject({ kind: "settled", status: "failed", errorCode: "cancelled", error: "cancelled: enough" });
    expect((replies(cancelled)[1] ?? "").length).toBeLessThan("You said: and another slow one, with quite a few words".length);
    reloaded.stop();
  });

  it("steers a run in flight and compacts the session", async () => {
    const conversation = open("conv-3");
    await conversation.send("a slow answer, please, about the weather on mars");
    await until(conversation, (s) => (replies(s)[0] ?? "").length > 2);
    await conversation.steer("actually, about venus");
    const steered = await until(conversation, (s) => settledCount(s) === 1);
    expect(steered.messages.some((m) => m.kind === "user" && m.origin === "steer" && m.text === "actually, about venus")).toBe(true);
    await conversation.compact();
    const compacted = await until(conversation, (s) => settledCount(s) === 2 && s.status === "idle");
    expect(compacted.messages.some((m) => m.kind === "compaction")).toBe(true);
    conversation.stop();
  });
});
