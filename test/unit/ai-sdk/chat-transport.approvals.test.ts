/**
 * Approvals through `HarnessChatTransport` and the AI SDK's own `Chat` (headless `useChat`)
 * against a served runtime whose keyless `support` agent calls `refund` (needs approval above
 * $100): a waiting call shows as its `dynamic-tool` part in `approval-requested` and a pending
 * `data-approval` part while the reply keeps streaming; `approve` runs it once and the reply goes
 * on, `deny` runs nothing; a reloaded chat (history + resume) shows the same states.
 */
import { Chat } from "@ai-sdk/react";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HarnessChatTransport, type HarnessApprovalData, type HarnessUIMessage } from "../../../src/ai-sdk/index.ts";
import { createClient, HarnessHttpError, type HarnessClient } from "../../../src/client/index.ts";
import { startApprovalServer, type ApprovalServer } from "../../support/approval-agent.ts";

let h: ApprovalServer;
let client: HarnessClient;
beforeAll(async () => {
  h = await startApprovalServer();
  client = createClient({ baseUrl: h.url });
});
afterAll(async () => {
  await h?.close();
});

const transportFor = (instance: string) => new HarnessChatTransport({ client, agent: "support", instance });
const until = (what: string, check: () => boolean, ms = 15_000) =>
  new Promise<void>((resolve, reject) => {
    const deadline = Date.now() + ms;
    const tick = () => (check() ? resolve() : Date.now() > deadline ? reject(new Error(`until: timed out waiting for ${what}`)) : setTimeout(tick, 5));
    tick();
  });

type Part = HarnessUIMessage["parts"][number];
const toolParts = (message: HarnessUIMessage | undefined) => (message?.parts ?? []).filter((p): p is Extract<Part, { type: "dynamic-tool" }> => p.type === "dynamic-tool");
const approvals = (message: HarnessUIMessage | undefined): HarnessApprovalData[] =>
  (message?.parts ?? []).flatMap((p) => (p.type === "data-approval" ? [p.data] : []));
const reply = (chat: Chat<HarnessUIMessage>) => (chat.lastMessage?.role === "assistant" ? chat.lastMessage : undefined);

describe("approvals in useChat through HarnessChatTransport", () => {
  it("pending calls show as approval-requested while the reply streams; approve runs one once, deny runs nothing; a reload shows the same", async () => {
    const instance = "ai-approvals-1";
    const transport = transportFor(instance);
    const chat = new Chat<HarnessUIMessage>({ id: "default", transport });
    const refundsBefore = h.log.refunds.length;
    void chat.sendMessage({ text: "refund 240 and refund 500" });

    await until("two pending approvals", () => approvals(reply(chat)).filter((a) => a.state === "pending").length === 2);
    // The run waits (parked, nothing holds it) and the page's stream is still open: Approve/Deny now.
    expect(chat.status).toBe("streaming");
    const tools = toolParts(reply(chat));
    expect(tools.map((t) => [t.toolName, t.state, t.input])).toEqual([
      ["refund", "approval-requested", { amount: 240 }],
      ["refund", "approval-requested", { amount: 500 }],
    ]);
    const pending = approvals(reply(chat));
    const submissionId = chat.messages[0]!.id;
    expect(pending[0]).toMatchObject({ state: "pending", submissionId, callId: tools[0]!.toolCallId, toolName: "refund", approvalId: `${submissionId}/${tools[0]!.toolCallId}` });
    expect(Date.parse(pending[0]!.expiresAt)).toBeGreaterThan(Date.now());
    expect(tools.map((t) => t.approval?.id)).toEqual(pending.map((a) => a.approvalId));

    // A second page (a reload) while the calls wait: history plus the resumed reply, the same states.
    const reloaded = transportFor(instance);
    const second = new Chat<HarnessUIMessage>({ id: "default", transport: reloaded, messages: await reloaded.loadMessages("default") });
    void second.resumeStream();
    await until("the reloaded chat's pending approvals", () => approvals(reply(second)).filter((a) => a.state === "pending").length === 2);
    expect(toolParts(reply(second)).map((t) => t.state)).toEqual(["approval-requested", "approval-requested"]);

    const approved = await transport.approve("default", tools[0]!.approval!.id, { reason: "the parcel arrived broken" });
    expect(approved).toMatchObject({ submissionId, callId: tools[0]!.toolCallId, approved: true });
    await reloaded.deny("default", pending[1]!.approvalId, { reason: "needs a manager" });

    await until("the settlement", () => reply(chat)?.parts.some((p) => p.type === "data-settlement") === true);
    await until("the chat is ready", () => chat.status === "ready");
    const done = reply(chat)!;
    const [first, denied] = toolParts(done);
    expect(first).toMatchObject({ state: "output-available", output: { text: "refunded $240" }, approval: { id: pending[0]!.approvalId, approved: true } });
    expect(denied).toMatchObject({ state: "output-denied", approval: { id: pending[1]!.approvalId, approved: false, reason: "needs a manager" } });
    expect(approvals(done).map((a) => [a.state, a.reason])).toEqual([
      ["approved", "the parcel arrived broken"],
      ["denied", "needs a manager"],
    ]);
    // One part per call, updated in place.
    expect(done.parts.filter((p) => p.type === "data-approval")).toHaveLength(2);
    expect(h.log.refunds.slice(refundsBefore), "the approved refund ran once, the denied one never").toEqual([240]);

    // The other page followed the same records; a fresh load reads the same from the log.
    await until("the reloaded chat's settlement", () => second.status === "ready" && reply(second)?.parts.some((p) => p.type === "data-settlement") === true);
    expect(toolParts(reply(second)).map((t) => t.state)).toEqual(["output-available", "output-denied"]);
    const history = await transportFor(instance).loadMessages("default");
    expect(toolParts(history.at(-1)).map((t) => t.state)).toEqual(["output-available", "output-denied"]);
    expect(approvals(history.at(-1)).map((a) => a.state)).toEqual(["approved", "denied"]);
  });

  it("a decision that lost to another is refused with the harness's code; a malformed approval id is refused before any request", async () => {
    const instance = "ai-approvals-2";
    const transport = transportFor(instance);
    const chat = new Chat<HarnessUIMessage>({ id: "default", transport });
    void chat.sendMessage({ text: "refund 300" });
    await until("a pending approval", () => approvals(reply(chat)).some((a) => a.state === "pending"));
    const [asked] = approvals(reply(chat));
    await transport.deny("default", asked!.approvalId);
    const lost = await transport.approve("default", asked!.approvalId).catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(HarnessHttpError);
    expect(lost).toMatchObject({ status: 409, code: "already_decided" });
    await expect(transport.approve("default", "no-slash")).rejects.toThrow(/not an approval id/);
    await until("the chat is ready", () => chat.status === "ready");
    expect(toolParts(reply(chat)).map((t) => t.state)).toEqual(["output-denied"]);
  });
});
