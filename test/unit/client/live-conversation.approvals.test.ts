/**
 * `LiveConversation` (the store behind `useConversation`) with calls that wait for a person:
 * against a served runtime whose keyless `support` agent calls `refund` (needs approval above
 * $100), the snapshot lists the pending calls (the tool items whose approval is pending);
 * `approve` runs one once and `deny` runs nothing, and the list empties as the decisions land;
 * a second store (a reloaded page) sees the same pending calls.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, HarnessHttpError, LiveConversation, type HarnessClient, type LiveConversationSnapshot } from "../../../src/client/index.ts";
import type { ToolItem } from "../../../src/client/message-view.ts";
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

function open(instance: string): LiveConversation {
  const conversation = new LiveConversation({ client, agent: "support", instance });
  conversation.start();
  return conversation;
}

function until(conversation: LiveConversation, what: string, check: (s: LiveConversationSnapshot) => boolean, ms = 15_000): Promise<LiveConversationSnapshot> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      unsubscribe();
      reject(new Error(`until ${what}: timed out at ${JSON.stringify(conversation.getSnapshot())}`));
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

const tools = (s: LiveConversationSnapshot) => s.messages.filter((m): m is ToolItem => m.kind === "tool");

describe("LiveConversation: pending approvals", () => {
  it("lists the calls waiting for a person; approve runs one once, deny runs nothing; a second store sees the same", async () => {
    const instance = "live-approvals-1";
    const conversation = open(instance);
    await until(conversation, "idle", (s) => s.status === "idle");
    expect(conversation.getSnapshot().pendingApprovals).toEqual([]);
    const refundsBefore = h.log.refunds.length;
    const { submissionId } = await conversation.send("refund 240 and refund 500");

    const waiting = await until(conversation, "two pending", (s) => s.pendingApprovals.length === 2);
    expect(waiting.status).toBe("running");
    expect(waiting.pendingApprovals.map((p) => [p.name, p.args, p.submissionId, p.approval.state])).toEqual([
      ["refund", { amount: 240 }, submissionId, "pending"],
      ["refund", { amount: 500 }, submissionId, "pending"],
    ]);
    const [first, second] = waiting.pendingApprovals;
    expect(first!.approval.approvalId).toBe(`${submissionId}/${first!.callId}`);
    // The pending items are the conversation's own tool items.
    expect(tools(waiting)).toEqual([...waiting.pendingApprovals]);

    const reloaded = open(instance);
    const seen = await until(reloaded, "the same pending calls", (s) => s.pendingApprovals.length === 2);
    expect(seen.pendingApprovals.map((p) => p.approval.approvalId)).toEqual(waiting.pendingApprovals.map((p) => p.approval.approvalId));

    await conversation.approve(first!.approval.approvalId, { reason: "fine" });
    const one = await until(conversation, "one pending", (s) => s.pendingApprovals.length === 1);
    expect(one.pendingApprovals[0]!.callId).toBe(second!.callId);
    expect(tools(one)[0]!.approval).toMatchObject({ state: "approved", reason: "fine" });

    await reloaded.deny(second!.approval.approvalId, { reason: "needs a manager" });
    const done = await until(conversation, "settled and idle", (s) => s.status === "idle" && s.messages.some((m) => m.kind === "settled"));
    expect(done.pendingApprovals).toEqual([]);
    expect(tools(done).map((t) => [t.approval?.state, t.outcome])).toEqual([
      ["approved", "refunded $240"],
      ["denied", expect.stringContaining("needs a manager")],
    ]);
    expect(h.log.refunds.slice(refundsBefore), "the approved refund ran once, the denied one never").toEqual([240]);
    await until(reloaded, "the second store settled", (s) => s.status === "idle" && s.pendingApprovals.length === 0);

    const lost = await conversation.approve(second!.approval.approvalId).catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(HarnessHttpError);
    expect(lost).toMatchObject({ status: 409 });
    await expect(conversation.deny("not-an-approval-id")).rejects.toThrow(/not an approval id/);
    conversation.stop();
    reloaded.stop();
  });
});
