import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Submission } from "../../../src/store/submission.ts";
import { summarize } from "../../../src/runtime/submission-view.ts";
import type { SubmissionDetail, SubmissionPage } from "../../../src/protocol/submission-view.ts";
import { snapshot, startTestServer, type TestServer } from "../../support/test-server.ts";

let h: TestServer;
beforeAll(async () => {
  h = await startTestServer({ maxRequestWaitMs: 5_000 });
});
afterAll(async () => {
  await h?.close();
});

let seq = 0;
const fresh = () => `ops-${++seq}`;

async function dispatch(instance: string, body: string, session?: string, wait = true) {
  const res = await fetch(`${h.url}/agents/assistant/${instance}${wait ? "?wait=true" : ""}`, {
    method: "POST",
    body: JSON.stringify({ kind: "user", body, ...(session ? { session } : {}) }),
  });
  expect(res.status).toBe(wait ? 200 : 202);
  return (await res.json()) as { submissionId: string; conversationId: string };
}

async function getJson<T>(path: string, status = 200): Promise<T> {
  const res = await fetch(`${h.url}${path}`);
  expect(res.status, `${path}: ${res.status}`).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  return (await res.json()) as T;
}

describe("GET /agents/:agent/:instance/submissions", () => {
  it("lists a session's submissions newest first, paged with next/after", async () => {
    const instance = fresh();
    const ids = [];
    for (const body of ["one", "two", "three"]) ids.push((await dispatch(instance, body)).submissionId);
    await dispatch(instance, "elsewhere", "other");

    const all = await getJson<SubmissionPage>(`/agents/assistant/${instance}/submissions`);
    expect(all.submissions.map((s) => s.id)).toEqual([...ids].reverse());
    expect(all.next).toBeUndefined();
    const first = all.submissions[0]!;
    expect(first).toMatchObject({ status: "settled", session: "default", kind: "user", attemptCount: 1, outcome: { status: "succeeded" } });
    expect(first.settledAt).toBeGreaterThanOrEqual(first.createdAt);

    const page1 = await getJson<SubmissionPage>(`/agents/assistant/${instance}/submissions?limit=2`);
    expect(page1.submissions.map((s) => s.id)).toEqual([ids[2], ids[1]]);
    expect(page1.next).toBe(ids[1]);
    const page2 = await getJson<SubmissionPage>(`/agents/assistant/${instance}/submissions?limit=2&after=${page1.next}`);
    expect(page2.submissions.map((s) => s.id)).toEqual([ids[0]]);
    expect(page2.next).toBeUndefined();

    const other = await getJson<SubmissionPage>(`/agents/assistant/${instance}/submissions?session=other`);
    expect(other.submissions).toHaveLength(1);
    expect(other.submissions[0]!.session).toBe("other");
    const none = await getJson<SubmissionPage>(`/agents/assistant/${fresh()}/submissions`);
    expect(none).toEqual({ submissions: [] });
  });

  it("filters by status", async () => {
    const instance = fresh();
    await dispatch(instance, "done");
    h.gate.close();
    const held = await dispatch(instance, "[hold] busy", undefined, false);
    const queued = await dispatch(instance, "behind", undefined, false);
    try {
      const q = await getJson<SubmissionPage>(`/agents/assistant/${instance}/submissions?status=queued`);
      expect(q.submissions.map((s) => s.id)).toEqual([queued.submissionId]);
      const settled = await getJson<SubmissionPage>(`/agents/assistant/${instance}/submissions?status=settled`);
      expect(settled.submissions).toHaveLength(1);
      const all = await getJson<SubmissionPage>(`/agents/assistant/${instance}/submissions`);
      expect(all.submissions.map((s) => s.id).slice(0, 2)).toEqual([queued.submissionId, held.submissionId]);
    } finally {
      h.gate.release();
      await h.runtime.wait(queued.submissionId);
    }
  });

  it("answers 400 {error, code} for a bad status, limit or cursor, and stores nothing", async () => {
    const instance = fresh();
    const { submissionId } = await dispatch(instance, "hi");
    const { submissionId: elsewhere } = await dispatch(fresh(), "hi");
    const before = await snapshot(h.store);
    for (const [query, message] of [
      ["status=done", /invalid status "done"/],
      ["limit=0", /invalid limit 0/],
      ["limit=101", /invalid limit 101/],
      ["limit=ten", /invalid limit "ten"/],
      ["limit=-1", /invalid limit "-1"/],
      ["after=bad%20id", /invalid cursor/],
      [`after=${elsewhere}`, /not a submission of this session/],
      ["session=bad%20session", /invalid session/],
    ] as const) {
      const res = await fetch(`${h.url}/agents/assistant/${instance}/submissions?${query}`);
      expect(res.status, query).toBe(400);
      const body = (await res.json()) as { error: string; code: string };
      expect(body.code, query).toBe("invalid_request");
      expect(body.error, query).toMatch(message);
    }
    const unknown = await fetch(`${h.url}/agents/nobody/${instance}/submissions`);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { code: string }).code).toBe("unknown_agent");
    expect(await snapshot(h.store)).toEqual(before);
    expect(submissionId).toBeTruthy();
  });
});

describe("GET /agents/:agent/:instance/submissions/:submissionId", () => {
  it("answers one submission with its input, outcome and attempts", async () => {
    const instance = fresh();
    const { submissionId } = await dispatch(instance, "tell me");
    const detail = await getJson<SubmissionDetail>(`/agents/assistant/${instance}/submissions/${submissionId}`);
    expect(detail).toMatchObject({
      id: submissionId,
      status: "settled",
      input: { kind: "user", body: "tell me" },
      outcome: { status: "succeeded" },
      attemptCount: 1,
    });
    expect(detail.attempts).toHaveLength(1);
    expect(detail.attempts[0]!.startedAt).toBeGreaterThanOrEqual(detail.createdAt);
  });

  it("answers 404 submission_not_found for another instance's submission or an unknown id", async () => {
    const { submissionId } = await dispatch(fresh(), "mine");
    const notHere = await fetch(`${h.url}/agents/assistant/${fresh()}/submissions/${submissionId}`);
    expect(notHere.status).toBe(404);
    expect(((await notHere.json()) as { code: string }).code).toBe("submission_not_found");
    const unknown = await fetch(`${h.url}/agents/assistant/${fresh()}/submissions/nope`);
    expect(unknown.status).toBe(404);
    const bad = await fetch(`${h.url}/agents/assistant/${fresh()}/submissions/${encodeURIComponent("a b")}`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { code: string }).code).toBe("invalid_request");
  });
});

describe("the submission summary", () => {
  const base = (): Submission => ({
    id: "s1",
    conversationId: "c1",
    sessionKey: { agent: "a", instance: "i", session: "default" },
    status: "settled",
    input: { kind: "user", body: "x" },
    attemptCount: 2,
    createdAt: 1_000,
    updatedAt: 5_000,
    depth: 0,
    pendingResume: false,
    cancelRequested: false,
  });

  it("carries the settlement's usage, cost and error code, never its result", () => {
    const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15 };
    const cost = { input: 0.1, output: 0.2, cacheRead: 0, cacheWrite: 0, total: 0.3 };
    const view = summarize({
      ...base(),
      lastError: "provider 500",
      outcome: { status: "failed", error: "boom", errorCode: "run_failed", usage, cost, result: { big: true } },
    });
    expect(view).toEqual({
      id: "s1",
      conversationId: "c1",
      session: "default",
      status: "settled",
      kind: "user",
      attemptCount: 2,
      createdAt: 1_000,
      updatedAt: 5_000,
      settledAt: 5_000,
      lastError: "provider 500",
      outcome: { status: "failed", error: "boom", errorCode: "run_failed", usage, cost },
    });
  });

  it("reports a settlement without a stored outcome (a cancel while queued) as failed with its reason", () => {
    const view = summarize({ ...base(), attemptCount: 0, lastError: "cancelled by operator" });
    expect(view.outcome).toEqual({ status: "failed", error: "cancelled by operator" });
    expect(summarize({ ...base(), status: "running", lastError: "retrying" }).outcome).toBeUndefined();
  });
});
