/**
 * Runtime.as(principal): every request method asks the policy first, with the action and target
 * the docs name, and a refusal (false, a throw, anything but true) reaches nothing of the runtime.
 */
import { describe, expect, it } from "vitest";
import { callerRuntime } from "../../../src/runtime/caller-runtime.ts";
import type { Runtime } from "../../../src/runtime/runtime.ts";
import type { AccessAction, AccessTarget, Authorize } from "../../../src/protocol/principal.ts";
import { isHarnessError } from "../../../src/errors.ts";
import { ownerPolicy } from "../../../src/auth/owner-policy.ts";

/** A runtime that records every method called on it and answers something plausible. */
function recordingRuntime() {
  const calls: string[] = [];
  const answers: Record<string, unknown> = {
    dispatch: { submissionId: "S1", conversationId: "C1", replayed: false },
    compact: { submissionId: "S2", conversationId: "C1", replayed: false },
    conversation: { id: "C1", key: { agent: "assistant", instance: "alice", session: "default" }, createdAt: 0 },
    fork: { agent: "assistant", instance: "alice", session: "f", conversationId: "C9", records: 1, submissionId: "S9" },
    records: [],
  };
  const runtime = new Proxy({} as Runtime, {
    get(_t, name: string) {
      if (name === "hasAgent") return () => true;
      if (name === "then") return undefined;
      return (...args: unknown[]) => {
        calls.push(name);
        if (name === "onAppend") return () => {};
        if (name === "attachmentLimits") return { policy: {}, directUploads: false };
        return Promise.resolve(answers[name] ?? { args });
      };
    },
  });
  return { runtime, calls };
}

const own = { agent: "assistant", instance: "alice" };
/** Who uploaded what: nobody. */
const noUploads = { isAttachmentUploader: async () => false };
const other = { agent: "assistant", instance: "bob" };
const message = { kind: "user" as const, body: "hi" };

/** Each request method with an address of `at`, as a route would call it. */
const requests: Record<string, (r: ReturnType<typeof callerRuntime>, at: typeof own) => Promise<unknown>> = {
  dispatch: (r, at) => r.dispatch({ ...at, message }),
  compact: (r, at) => r.compact(at),
  steer: (r, at) => r.steer({ ...at, body: "x" }),
  followUp: (r, at) => r.followUp({ ...at, body: "x" }),
  cancel: (r, at) => r.cancel("S1", undefined, at),
  decide: (r, at) => r.decide({ ...at, submissionId: "S1", callId: "c1", approved: true }),
  pendingApprovals: (r, at) => r.pendingApprovals(at),
  conversation: (r, at) => r.conversation(at),
  sessionLive: (r, at) => r.sessionLive(at),
  listSubmissions: (r, at) => r.listSubmissions(at),
  submission: (r, at) => r.submission({ ...at, submissionId: "S1" }),
  deleteConversation: (r, at) => r.deleteConversation(at),
  exportConversation: (r, at) => r.exportConversation(at),
  importConversation: (r, at) => r.importConversation(at, "{}"),
  "fork out of it": (r, at) => r.fork({ ...at, fromRecordId: "01ARZ3NDEKTSV4RRFFQ69G5FAV", targetInstance: "alice" }),
  "fork into it": (r, at) => r.fork({ ...own, fromRecordId: "01ARZ3NDEKTSV4RRFFQ69G5FAV", targetInstance: at.instance }),
};

describe("Runtime.as(principal)", () => {
  const ownerOnly: Authorize = (principal, _action, target) => target.kind === "session" && target.instance === principal.id;

  it("passes every request on its own instance through to the runtime", async () => {
    for (const [name, call] of Object.entries(requests)) {
      const { runtime, calls } = recordingRuntime();
      await call(callerRuntime(runtime, { id: "alice" }, ownerOnly, noUploads), own);
      expect(calls.length, name).toBeGreaterThan(0);
    }
  });

  it("refuses each request on another's instance with forbidden (403) before the runtime is reached", async () => {
    for (const [name, call] of Object.entries(requests)) {
      const { runtime, calls } = recordingRuntime();
      const err = await call(callerRuntime(runtime, { id: "alice" }, ownerOnly, noUploads), other).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isHarnessError(err, "forbidden"), `${name}: ${String(err)}`).toBe(true);
      expect(calls, `${name} reached the runtime`).toEqual([]);
    }
  });

  it("asks the policy with the action and target the docs name; a fork is an export of the source and an import into the target", async () => {
    const asked: [AccessAction, AccessTarget][] = [];
    const { runtime } = recordingRuntime();
    const face = callerRuntime(runtime, { id: "alice" }, (_p, action, target) => (asked.push([action, target]), true), noUploads);
    await face.dispatch({ ...own, session: "s1", message });
    await face.cancel("S1", undefined, own);
    await face.fork({ ...own, fromRecordId: "01ARZ3NDEKTSV4RRFFQ69G5FAV", targetInstance: "bob", message });
    await face.attachment("sha256:00");
    await face.uploadAttachment({ contentType: "text/plain", data: new Uint8Array() });
    expect(asked).toEqual([
      ["dispatch", { kind: "session", agent: "assistant", instance: "alice", session: "s1" }],
      ["cancel", { kind: "session", agent: "assistant", instance: "alice" }],
      ["exportConversation", { kind: "session", agent: "assistant", instance: "alice", session: "default" }],
      ["importConversation", { kind: "session", agent: "assistant", instance: "bob" }],
      ["dispatch", { kind: "session", agent: "assistant", instance: "bob" }],
      ["attachment", { kind: "attachment", digest: "sha256:00", uploaded: false }],
      ["uploadAttachment", { kind: "attachment" }],
    ]);
  });

  it("fails closed: a policy that throws or answers anything but true refuses", async () => {
    for (const policy of [() => {
      throw new Error("policy bug");
    }, () => "yes" as unknown as boolean, async () => undefined as unknown as boolean]) {
      const { runtime, calls } = recordingRuntime();
      const err = await callerRuntime(runtime, { id: "alice" }, policy, noUploads).dispatch({ ...own, message }).catch((e: unknown) => e);
      expect(isHarnessError(err, "forbidden")).toBe(true);
      expect(calls).toEqual([]);
    }
  });

  it("serves ids alone (records, onAppend, wait) only for what it reached through an authorized address", async () => {
    const { runtime, calls } = recordingRuntime();
    const face = callerRuntime(runtime, { id: "alice" }, ownerOnly, noUploads);
    for (const byId of [() => face.records("C1"), () => face.wait("S1"), async () => face.onAppend("C1", () => {})]) {
      expect(isHarnessError(await byId().catch((e: unknown) => e), "forbidden")).toBe(true);
    }
    expect(calls).toEqual([]);
    await face.conversation(own); // opens C1
    await face.records("C1");
    face.onAppend("C1", () => {});
    await face.dispatch({ ...own, message }); // admits S1
    await face.wait("S1");
    expect(calls).toEqual(["conversation", "records", "onAppend", "dispatch", "wait"]);
  });

  it("an attachment (ADR 0046): its uploader reads it by digest; another caller is refused before the bytes are read, and may not put it in a message", async () => {
    const digest = `sha256:${"b".repeat(64)}`;
    const uploads = { isAttachmentUploader: async (d: string, who: string) => d === digest && who === "bob" };
    const bob = recordingRuntime();
    await callerRuntime(bob.runtime, { id: "bob" }, ownerPolicy(), uploads).attachment(digest);
    expect(bob.calls).toEqual(["attachment"]);

    const alice = recordingRuntime();
    const face = callerRuntime(alice.runtime, { id: "alice" }, ownerPolicy(), uploads);
    expect(isHarnessError(await face.attachment(digest).catch((e: unknown) => e), "forbidden")).toBe(true);
    // Through her own conversation, which does not reference it: the log is read, not the bytes.
    expect(isHarnessError(await face.attachment(digest, own).catch((e: unknown) => e), "forbidden")).toBe(true);
    expect(isHarnessError(await face.attachment(digest, other).catch((e: unknown) => e), "forbidden"), "through bob's conversation").toBe(true);
    const attached = { ...message, attachments: [{ digest, mediaType: "image/png", size: 1 }] };
    expect(isHarnessError(await face.dispatch({ ...own, message: attached }).catch((e: unknown) => e), "forbidden")).toBe(true);
    expect(alice.calls.filter((c) => c === "attachment" || c === "dispatch"), "neither the bytes read nor the message admitted").toEqual([]);
  });

  it("checks the address's rules before the policy: a malformed id is invalid_request whoever asks", async () => {
    const { runtime } = recordingRuntime();
    let asked = 0;
    const err = await callerRuntime(runtime, { id: "alice" }, () => (asked++, true), noUploads)
      .dispatch({ agent: "assistant", instance: "bad id!", message })
      .catch((e: unknown) => e);
    expect(isHarnessError(err, "invalid_request")).toBe(true);
    expect(asked).toBe(0);
  });
});
