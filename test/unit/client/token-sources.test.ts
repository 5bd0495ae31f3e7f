/**
 * The AI SDK transport and `LiveConversation` (behind `useConversation`) take the client's `token`
 * option with a `baseUrl` (issue 34): against a server with authentication on, a reply streams
 * with the token, the token function is asked for every request, and without a token the
 * refusal is `unauthorized`.
 */
import { Chat } from "@ai-sdk/react";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HarnessChatTransport, type HarnessUIMessage } from "../../../src/ai-sdk/index.ts";
import { LiveConversation, type LiveConversationSnapshot } from "../../../src/client/index.ts";
import { startTestServer, type TestServer } from "../../support/test-server.ts";

const authenticate = (request: Request) => (request.headers.get("authorization") === "Bearer alice-token" ? { id: "alice" } : null);

let h: TestServer;
beforeAll(async () => {
  h = await startTestServer({ retryMs: 20, auth: { authenticate } });
});
afterAll(async () => {
  await h?.close();
});

function until(conversation: LiveConversation, check: (s: LiveConversationSnapshot) => boolean): Promise<LiveConversationSnapshot> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`until: timed out at ${JSON.stringify(conversation.getSnapshot())}`)), 15_000);
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

describe("token through the transport and LiveConversation", () => {
  it("HarnessChatTransport({baseUrl, token}) sends every request with the token; without one the chat's error is unauthorized", async () => {
    let asked = 0;
    const transport = new HarnessChatTransport({ baseUrl: h.url, token: () => (asked++, "alice-token"), agent: "assistant", instance: "alice" });
    const chat = new Chat<HarnessUIMessage>({ id: "t1", transport });
    await chat.sendMessage({ text: "hello" });
    expect(chat.error).toBeUndefined();
    expect(chat.lastMessage?.parts.at(-1)).toMatchObject({ type: "data-settlement", data: { status: "succeeded" } });
    // The dispatch and at least one stream connection.
    expect(asked).toBeGreaterThanOrEqual(2);

    const anonymous = new Chat<HarnessUIMessage>({ id: "t2", transport: new HarnessChatTransport({ baseUrl: h.url, agent: "assistant", instance: "alice" }) });
    await anonymous.sendMessage({ text: "hello" });
    expect(anonymous.error).toMatchObject({ status: 401, code: "unauthorized" });
  });

  it("LiveConversation({baseUrl, token}) reads and sends with the token; without one it shows unauthorized", async () => {
    const conversation = new LiveConversation({ baseUrl: h.url, token: async () => "alice-token", agent: "assistant", instance: "alice", session: "live" });
    conversation.start();
    await until(conversation, (s) => s.status === "idle");
    await conversation.send("hello");
    const s = await until(conversation, (x) => x.status === "idle" && x.messages.some((m) => m.kind === "assistant"));
    expect(s.error).toBeUndefined();
    conversation.stop();

    const anonymous = new LiveConversation({ baseUrl: h.url, agent: "assistant", instance: "alice", session: "live" });
    anonymous.start();
    const refused = await until(anonymous, (x) => x.status === "error");
    expect(refused.error).toMatchObject({ status: 401, code: "unauthorized" });
    anonymous.stop();
  });

  it("neither a client nor a baseUrl is refused (a TypeError naming both), and a type error", () => {
    // @ts-expect-error: one of client or baseUrl is required
    expect(() => new HarnessChatTransport({ agent: "assistant", instance: "x" })).toThrow(TypeError);
  });
});
