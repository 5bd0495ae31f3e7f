import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, HarnessHttpError, type HarnessClient } from "../../../src/client/index.ts";
import { startApprovalServer, type ApprovalServer } from "../../support/approval-agent.ts";

/** The client's part for durable waits (ADR 0025) against a served runtime: approve, deny, pendingApprovals, resolveCallback. */

let h: ApprovalServer;
let client: HarnessClient;
beforeAll(async () => {
  h = await startApprovalServer();
  client = createClient({ baseUrl: h.url });
});
afterAll(async () => {
  await h?.close();
});

let seq = 0;
const fresh = () => `ca-${++seq}`;
const user = (body: string) => ({ kind: "user" as const, body });

async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const pendingOf = (instance: string, n: number) =>
  until("pending approvals", () => client.pendingApprovals("support", instance), (a) => a.length === n);

describe("client: approvals and callbacks", () => {
  it("pendingApprovals lists what waits; approve runs the call once, deny does not run it; the same decision again stands", async () => {
    const instance = fresh();
    const { submissionId } = await client.dispatch("support", instance, user("refund 240 and refund 500"));
    const pending = await pendingOf(instance, 2);
    expect(pending.map((a) => [a.submissionId, a.toolName, a.args])).toEqual([
      [submissionId, "refund", { amount: 240 }],
      [submissionId, "refund", { amount: 500 }],
    ]);
    const [first, second] = pending as [(typeof pending)[0], (typeof pending)[0]];
    expect(first.approvalId).toBe(`${submissionId}/${first.callId}`);
    expect(first.expiresAt).toBeGreaterThan(Date.now());

    const approved = await client.approve("support", instance, submissionId, first.callId, { reason: "fine" });
    expect(approved).toMatchObject({ submissionId, callId: first.callId, approved: true, reason: "fine" });
    expect(await client.approve("support", instance, submissionId, first.callId, { reason: "fine" }), "idempotent").toEqual(approved);
    expect((await client.pendingApprovals("support", instance)).map((a) => a.callId)).toEqual([second.callId]);

    const denied = await client.deny("support", instance, submissionId, second.callId, { reason: "too much" });
    expect(denied).toMatchObject({ approved: false, reason: "too much" });
    const other = await client.approve("support", instance, submissionId, second.callId).catch((e: unknown) => e);
    expect(other).toBeInstanceOf(HarnessHttpError);
    expect(other).toMatchObject({ status: 409, code: "already_decided" });

    const settled = await client.waitForSettled("support", instance, submissionId);
    expect(settled).toMatchObject({ status: "succeeded" });
    expect(h.log.refunds, "the approved call ran once, the denied one never").toEqual([240]);
    expect(await client.pendingApprovals("support", instance)).toEqual([]);
  });

  it("throws typed errors: unknown submission or call 404, a call that asked no approval 409, a reason over 4 KB 400", async () => {
    const instance = fresh();
    const missing = await client.approve("support", instance, "01ARZ3NDEKTSV4RRFFQ69G5FAV", "c").catch((e: unknown) => e);
    expect(missing).toMatchObject({ status: 404, code: "submission_not_found" });
    const { submissionId } = await client.dispatch("support", instance, user("refund 300"));
    const [pending] = await pendingOf(instance, 1);
    const noCall = await client.deny("support", instance, submissionId, "no-such-call").catch((e: unknown) => e);
    expect(noCall).toMatchObject({ status: 404, code: "call_not_found" });
    const long = await client.deny("support", instance, submissionId, pending!.callId, { reason: "x".repeat(4097) }).catch((e: unknown) => e);
    expect(long).toMatchObject({ status: 400 });
    expect((await client.pendingApprovals("support", instance)).map((a) => a.callId), "nothing decided").toEqual([pending!.callId]);
    await client.deny("support", instance, submissionId, pending!.callId);
    expect(await client.waitForSettled("support", instance, submissionId)).toMatchObject({ status: "succeeded" });
  });

  it("resolveCallback answers a deferred call (the same answer again is a replay, another 409, an unknown id 404)", async () => {
    const instance = fresh();
    const before = h.log.callbacks.length;
    const { submissionId } = await client.dispatch("support", instance, user("where is my label"));
    const handed = await until("the callback", async () => h.log.callbacks.slice(before), (c) => c.length === 1);
    const { callbackId } = handed[0]!;
    expect(await client.resolveCallback(callbackId, { result: { label: "1Z999" } })).toEqual({ status: "answered", replayed: false });
    expect(await client.resolveCallback(callbackId, { result: { label: "1Z999" } })).toEqual({ status: "answered", replayed: true });
    expect(await client.resolveCallback(callbackId, { error: "no label" }).catch((e: unknown) => e)).toMatchObject({ status: 409, code: "already_answered" });
    expect(await client.resolveCallback("A".repeat(32), { result: 1 }).catch((e: unknown) => e)).toMatchObject({ status: 404, code: "callback_not_found" });
    expect(await client.waitForSettled("support", instance, submissionId)).toMatchObject({ status: "succeeded" });
  });
});
