import { EventSource } from "eventsource";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { holdsAfter, nextPollMs, POLL_HOLD_MS, pollAfterRecords } from "../../../src/http/record-stream.ts";
import { appFor, parseSse, readUntil, recordsOf, startTestServer, type TestServer } from "../../support/test-server.ts";

let h: TestServer;
beforeAll(async () => {
  h = await startTestServer({ keepAliveMs: 15_000 });
});
afterAll(async () => {
  await h?.close();
});

let seq = 0;
const fresh = () => `s-${++seq}`;

async function dispatch(instance: string, body: string, harness = h) {
  const res = await fetch(`${harness.url}/agents/assistant/${instance}`, {
    method: "POST",
    body: JSON.stringify({ kind: "user", body }),
  });
  expect(res.status).toBe(202);
  return (await res.json()) as { submissionId: string; conversationId: string };
}

function stream(instance: string, init: { lastEventId?: string; query?: string } = {}, harness = h) {
  const headers: Record<string, string> = init.lastEventId ? { "Last-Event-ID": init.lastEventId } : {};
  return fetch(`${harness.url}/agents/assistant/${instance}${init.query ?? ""}`, { headers });
}

const settledIn = (frames: { event?: string }[]) => frames.some((f) => f.event === "submission_settled");

describe("SSE stream", () => {
  it("a settled conversation replays every record then closes; id and event equal the record's", async () => {
    const i = fresh();
    const ids = await dispatch(i, "what time is it?");
    await h.runtime.wait(ids.submissionId);
    const res = await stream(i);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(res.headers.get("cache-control")).toBe("no-cache");
    const frames = parseSse(await res.text());
    const expected = await h.runtime.records(ids.conversationId);
    const got = recordsOf(frames);
    expect(got).toEqual(expected);
    for (const f of frames.filter((f) => f.data)) {
      const r = JSON.parse(f.data!) as ConversationRecord;
      expect(f.id).toBe(r.id);
      expect(f.event).toBe(r.kind);
    }
    expect(got.map((r) => r.kind)).toEqual(
      expect.arrayContaining(["conversation_created", "user_message", "assistant_tool_call", "tool_outcome", "submission_settled"]),
    );
  });

  it("writes a comment and the retry hint first", async () => {
    const i = fresh();
    await h.runtime.wait((await dispatch(i, "hi")).submissionId);
    const text = await (await stream(i)).text();
    const first = parseSse(text)[0]!;
    expect(text.startsWith(":")).toBe(true);
    expect(first.comments.length).toBeGreaterThan(0);
    expect(first.retry).toBe(1000);
    expect(first.data).toBeUndefined();
  });

  it("replays strictly after Last-Event-ID (header or lastEventId query)", async () => {
    const i = fresh();
    const ids = await dispatch(i, "hello");
    await h.runtime.wait(ids.submissionId);
    const all = await h.runtime.records(ids.conversationId);
    const cut = all[2]!.id;
    const viaHeader = recordsOf(parseSse(await (await stream(i, { lastEventId: cut })).text()));
    expect(viaHeader).toEqual(all.slice(3));
    const viaQuery = recordsOf(parseSse(await (await stream(i, { query: `?lastEventId=${cut}` })).text()));
    expect(viaQuery).toEqual(all.slice(3));
  });

  it("answers 204 when the session is idle and the client is caught up", async () => {
    const i = fresh();
    const ids = await dispatch(i, "hello");
    await h.runtime.wait(ids.submissionId);
    const all = await h.runtime.records(ids.conversationId);
    const res = await stream(i, { lastEventId: all.at(-1)!.id });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");
  });

  it("answers 404 JSON for an unknown agent or a session without a conversation, 400 for bad ids", async () => {
    const nobody = await fetch(`${h.url}/agents/nobody/x`);
    expect(nobody.status).toBe(404);
    expect(await nobody.json()).toMatchObject({ code: "unknown_agent" });
    const none = await stream(fresh());
    expect(none.status).toBe(404);
    expect(await none.json()).toMatchObject({ code: "conversation_not_found" });
    const i = fresh();
    await h.runtime.wait((await dispatch(i, "x")).submissionId);
    for (const bad of ["not-an-id", "01J" + "!".repeat(23), "0".repeat(27)]) {
      const res = await stream(i, { lastEventId: bad });
      expect(res.status, bad).toBe(400);
      expect(await res.json()).toMatchObject({ code: "invalid_request" });
    }
    const badSession = await stream(i, { query: "?session=a%20b" });
    expect(badSession.status).toBe(400);
  });

  it("streams a live run (deltas while in flight) and ends by itself once settled", async () => {
    const i = fresh();
    h.gate.close();
    const ids = await dispatch(i, "[hold] stream me please");
    await h.gate.entered();
    const res = await stream(i);
    expect(res.status).toBe(200);
    const reader = readUntil(res, settledIn);
    // Let the live tail catch up before the run moves on.
    await new Promise((r) => setTimeout(r, 100));
    h.gate.release();
    const { frames } = await reader;
    const kinds = recordsOf(frames).map((r) => r.kind);
    expect(kinds.filter((k) => k === "assistant_text_delta").length).toBeGreaterThan(1);
    expect(kinds.at(-1)).toBe("submission_settled");
    expect(recordsOf(frames)).toEqual(await h.runtime.records(ids.conversationId));

    // A fresh reader of the settled session gets the replay and a clean end.
    const again = await stream(i);
    expect(recordsOf(parseSse(await again.text()))).toEqual(await h.runtime.records(ids.conversationId));
  });

  it("the live stream ends (EOF) after settlement without the client closing", async () => {
    const i = fresh();
    h.gate.close();
    await dispatch(i, "[hold] and then stop");
    await h.gate.entered();
    const res = await stream(i);
    const text = res.text();
    setTimeout(() => h.gate.release(), 50);
    const frames = parseSse(await text);
    expect(recordsOf(frames).at(-1)?.kind).toBe("submission_settled");
  });

  it("a reconnect with Last-Event-ID mid-stream gives no gap and no duplicate", async () => {
    const i = fresh();
    h.gate.close();
    const ids = await dispatch(i, "[hold] a reply long enough to have several deltas in it");
    await h.gate.entered();
    // First connection: read until the first delta arrives, then drop.
    const first = await stream(i);
    const firstRead = readUntil(first, (frames) => frames.some((f) => f.event === "assistant_text_delta"));
    h.gate.release();
    const part1 = recordsOf((await firstRead).frames);
    expect(part1.length).toBeGreaterThan(0);
    const second = await stream(i, { lastEventId: part1.at(-1)!.id });
    const part2 = second.status === 204 ? [] : recordsOf(parseSse(await second.text()));
    await h.runtime.wait(ids.submissionId);
    const joined = [...part1, ...part2];
    expect(new Set(joined.map((r) => r.id)).size).toBe(joined.length);
    expect(joined).toEqual(await h.runtime.records(ids.conversationId));
  });

  it("two concurrent readers see identical streams", async () => {
    const i = fresh();
    h.gate.close();
    const ids = await dispatch(i, "[hold] two readers watch this one");
    await h.gate.entered();
    const [a, b] = await Promise.all([stream(i), stream(i)]);
    const texts = Promise.all([a.text(), b.text()]);
    setTimeout(() => h.gate.release(), 50);
    const [ta, tb] = await texts;
    const ra = recordsOf(parseSse(ta));
    const rb = recordsOf(parseSse(tb));
    expect(ra).toEqual(rb);
    expect(ra).toEqual(await h.runtime.records(ids.conversationId));
    // Frame by frame too (ids and events).
    const frames = (t: string) => parseSse(t).filter((f) => f.data).map((f) => `${f.id} ${f.event}`);
    expect(frames(ta)).toEqual(frames(tb));
  });

  it("sends keep-alive comments while quiet, and ends itself after maxStreamMs", async () => {
    const quick = await startTestServer({ keepAliveMs: 60, maxStreamMs: 400 });
    try {
      const i = fresh();
      await dispatch(i, "[hold] quiet", quick);
      await quick.gate.entered();
      const started = Date.now();
      const res = await stream(i, {}, quick);
      const frames = parseSse(await res.text()); // ends by itself while the run is still held
      expect(Date.now() - started).toBeGreaterThanOrEqual(380);
      const comments = frames.flatMap((f) => f.comments);
      expect(comments.filter((c) => c === "keep-alive").length).toBeGreaterThanOrEqual(3);
      expect(recordsOf(frames).map((r) => r.kind)).toContain("user_message");
      quick.gate.release();
    } finally {
      await quick.close();
    }
  });

  it("closing the server ends open streams", async () => {
    const closing = await startTestServer();
    const i = fresh();
    await dispatch(i, "[hold] forever", closing);
    await closing.gate.entered();
    const res = await stream(i, {}, closing);
    const text = res.text();
    await new Promise((r) => setTimeout(r, 50));
    await closing.server.close();
    expect(recordsOf(parseSse(await text)).length).toBeGreaterThan(0);
    await closing.close();
  });

  it("an EventSource client follows a run, reconnects with Last-Event-ID, and stops on 204", async () => {
    const i = fresh();
    h.gate.close();
    const ids = await dispatch(i, "[hold] for the browser");
    await h.gate.entered();
    const seen: ConversationRecord[] = [];
    const kinds = ["conversation_created", "user_message", "assistant_message_started", "assistant_text_delta", "assistant_message_completed", "submission_settled"];
    const es = new EventSource(`${h.url}/agents/assistant/${i}`);
    let opens = 0;
    es.addEventListener("open", () => opens++);
    for (const kind of kinds) {
      es.addEventListener(kind, (e) => {
        const r = JSON.parse(e.data) as ConversationRecord;
        expect(e.lastEventId).toBe(r.id);
        expect(e.type).toBe(r.kind);
        seen.push(r);
      });
    }
    const stopped = new Promise<{ code?: number }>((resolve) => {
      es.addEventListener("error", (e) => {
        if (es.readyState === es.CLOSED) resolve(e as { code?: number });
      });
    });
    await new Promise((r) => setTimeout(r, 100));
    h.gate.release();
    const end = await stopped;
    es.close();
    expect(end.code).toBe(204);
    expect(opens).toBe(1);
    expect(seen).toEqual(await h.runtime.records(ids.conversationId));
  });
});

describe("SSE stream on a session waiting on subagents", () => {
  it("counts a waiting head as idle: 204 when caught up, and the replay ends", async () => {
    const { appFor } = await import("../../support/test-server.ts");
    const record = (id: string): ConversationRecord => ({
      id,
      kind: "user_message",
      conversationId: "C",
      session: "default",
      time: new Date(0).toISOString(),
      payload: { body: "hi" },
    });
    const log = [record("01ARZ3NDEKTSV4RRFFQ69G5FAV"), record("01ARZ3NDEKTSV4RRFFQ69G5FAW")];
    const fake = {
      hasAgent: () => true,
      conversation: async () => ({ id: "C", key: { agent: "assistant", instance: "p", session: "default" }, createdAt: 0 }),
      records: async (_c: string, after = "") => log.filter((r) => r.id > after),
      onAppend: () => () => {},
      sessionLive: async () => false,
      attachmentLimits: () => ({ policy: { "image/png": 1024 }, directUploads: false }),
      as: () => fake,
    } as unknown as Parameters<typeof appFor>[0];
    const app = appFor(fake);
    const res = await app.request("/agents/assistant/p");
    expect(res.status).toBe(200);
    expect(recordsOf(parseSse(await res.text()))).toEqual(log);
    const caughtUp = await app.request("/agents/assistant/p", { headers: { "Last-Event-ID": log[1]!.id } });
    expect(caughtUp.status).toBe(204);
  });
});

/**
 * The tail of a stream whose records are appended by another process (the worker functions on
 * Lambda): the runtime never notifies it, so it finds them by polling. Every store call counts
 * (on DynamoDB each is a read unit), so the calls themselves are what is checked.
 */
describe("SSE stream polling another process's appends", () => {
  const record = (id: string, kind: ConversationRecord["kind"] = "user_message"): ConversationRecord =>
    ({
      id,
      kind,
      conversationId: "C",
      session: "default",
      time: new Date(0).toISOString(),
      payload: kind === "user_message" ? { body: "hi" } : { status: "succeeded" },
    }) as ConversationRecord;

  function fakeRuntime() {
    const log: ConversationRecord[] = [record("01ARZ3NDEKTSV4RRFFQ69G5FAV")];
    const calls: string[] = [];
    let live = true;
    const runtime = {
      hasAgent: () => true,
      conversation: async () => ({ id: "C", key: { agent: "assistant", instance: "p", session: "default" }, createdAt: 0 }),
      records: async (_c: string, after = "") => {
        const found = log.filter((r) => r.id > after);
        calls.push(`records:${found.map((r) => r.kind).join(",")}`);
        return found;
      },
      onAppend: () => () => {},
      attachmentLimits: () => ({ policy: { "image/png": 1024 }, directUploads: false }),
      sessionLive: async () => {
        calls.push("sessionLive");
        return live;
      },
      // These tests are about the stream's reads: the caller's face is the fake itself.
      as: () => runtime,
    };
    return {
      runtime: runtime as unknown as Parameters<typeof appFor>[0],
      log,
      calls,
      setLive: (v: boolean) => (live = v),
    };
  }

  it("a caught-up poll reads the log only; liveness is asked again once a settlement is sent, and the stream ends at once", async () => {
    const fake = fakeRuntime();
    const app = appFor(fake.runtime, { pollMs: 5, maxPollMs: 10 });
    const res = await app.request("/agents/assistant/p", { headers: { "Last-Event-ID": fake.log[0]!.id } });
    expect(res.status).toBe(200);
    const body = res.text();
    // Caught up on a live session: many polls.
    while (fake.calls.filter((c) => c === "records:").length < 12) await new Promise((r) => setTimeout(r, 5));
    // The stream's start asked once (nothing to send: liveness first, then the read again); no poll asked since.
    expect(fake.calls.filter((c) => c === "sessionLive")).toHaveLength(1);

    // The worker settles the run: the session goes idle.
    fake.log.push(record("01ARZ3NDEKTSV4RRFFQ69G5FAW", "submission_settled"));
    fake.setLive(false);
    const frames = parseSse(await body);
    expect(recordsOf(frames).map((r) => r.kind)).toEqual(["submission_settled"]);
    // Right after the page with the settlement: one read finding nothing, liveness, the read again.
    const sent = fake.calls.indexOf("records:submission_settled");
    expect(fake.calls.slice(sent + 1)).toEqual(["records:", "sessionLive", "records:"]);
  });

  it("a replay asks liveness at its first empty poll (it was assumed, not read)", async () => {
    const fake = fakeRuntime();
    const app = appFor(fake.runtime, { pollMs: 5, maxPollMs: 10 });
    fake.setLive(false);
    const res = await app.request("/agents/assistant/p");
    expect(recordsOf(parseSse(await res.text()))).toHaveLength(1);
    expect(fake.calls).toEqual(["records:user_message", "records:", "sessionLive", "records:"]);
  });

  it("a tool's start asks nothing; an approval request asks liveness, and a stream whose run parked on it ends at once", async () => {
    const fake = fakeRuntime();
    const app = appFor(fake.runtime, { pollMs: 5, maxPollMs: 10 });
    const res = await app.request("/agents/assistant/p", { headers: { "Last-Event-ID": fake.log[0]!.id } });
    const body = res.text();
    while (fake.calls.length < 4) await new Promise((r) => setTimeout(r, 5));
    fake.log.push(record("01ARZ3NDEKTSV4RRFFQ69G5FAW", "tool_started"));
    while (!fake.calls.includes("records:tool_started")) await new Promise((r) => setTimeout(r, 5));
    const afterStart = fake.calls.length;
    while (fake.calls.length < afterStart + 6) await new Promise((r) => setTimeout(r, 5));
    expect(fake.calls.slice(afterStart).every((c) => c === "records:")).toBe(true);

    fake.log.push(record("01ARZ3NDEKTSV4RRFFQ69G5FAX", "approval_requested"));
    fake.setLive(false);
    expect(recordsOf(parseSse(await body)).map((r) => r.kind)).toEqual(["tool_started", "approval_requested"]);
    const sent = fake.calls.indexOf("records:approval_requested");
    expect(fake.calls.slice(sent + 1)).toEqual(["records:", "sessionLive", "records:"]);
  });

  it("a spawn is followed by a liveness check (the parent may have parked) while polling goes on for a live session", async () => {
    const fake = fakeRuntime();
    const app = appFor(fake.runtime, { pollMs: 5, maxPollMs: 10 });
    const res = await app.request("/agents/assistant/p", { headers: { "Last-Event-ID": fake.log[0]!.id } });
    const body = res.text();
    while (fake.calls.length < 6) await new Promise((r) => setTimeout(r, 5));
    fake.log.push(record("01ARZ3NDEKTSV4RRFFQ69G5FAW", "task_spawned"));
    while (!fake.calls.includes("records:task_spawned")) await new Promise((r) => setTimeout(r, 5));
    while (fake.calls.filter((c) => c === "sessionLive").length < 2) await new Promise((r) => setTimeout(r, 5));
    // Still live (the parent did not park): polling goes on without asking again.
    const asked = fake.calls.length;
    while (fake.calls.length < asked + 8) await new Promise((r) => setTimeout(r, 5));
    expect(fake.calls.slice(asked).every((c) => c === "records:")).toBe(true);
    fake.log.push(record("01ARZ3NDEKTSV4RRFFQ69G5FAX", "submission_settled"));
    fake.setLive(false);
    expect(recordsOf(parseSse(await body)).map((r) => r.kind)).toEqual(["task_spawned", "submission_settled"]);
  });
});

describe("the poll interval of a tail (ADR 0031)", () => {
  /** The intervals of the empty polls after records arrived at 0, until `untilMs`. */
  const intervals = (timing: { pollMs: number; maxPollMs: number }, untilMs: number) => {
    const out: number[] = [];
    let at = 0;
    let ms = timing.pollMs;
    while (at < untilMs) {
      at += ms;
      ms = nextPollMs(ms, timing, at);
      out.push(ms);
    }
    return out;
  };

  it("holds at half pollMs for POLL_HOLD_MS after records arrived (a first token comes soon after a run writes), then backs off 1.25x to the ceiling", () => {
    const timing = { pollMs: 100, maxPollMs: 1_000 };
    const polls = intervals(timing, 6_000);
    const held = polls.slice(0, polls.findIndex((ms) => ms !== 50));
    // The first poll at 100 ms, then every 50 ms until POLL_HOLD_MS has passed.
    expect(held.length).toBe((POLL_HOLD_MS - 100) / 50);
    expect(polls.slice(held.length, held.length + 4)).toEqual([63, 79, 99, 124]);
    expect(polls.at(-1)).toBe(1_000);
    // Backed off to the ceiling within about four seconds: about one read a second from then on.
    expect(polls.filter((ms) => ms === 1_000).length).toBeGreaterThan(1);
  });

  it("holds after what precedes a first token, not after a delta (the next flush is an interval away)", () => {
    for (const kind of ["user_message", "tool_outcome", "assistant_message_started", "conversation_created"]) expect(holdsAfter(kind), kind).toBe(true);
    for (const kind of ["assistant_text_delta", "assistant_thinking_delta"]) expect(holdsAfter(kind), kind).toBe(false);
  });

  it("comes back after a quarter interval when a page ends with a message's start (its first delta is written next, ADR 0036)", () => {
    const timing = { pollMs: 100, maxPollMs: 1_000 };
    expect(pollAfterRecords("assistant_message_started", timing)).toBe(25);
    for (const kind of ["user_message", "tool_outcome", "submission_settled"]) expect(pollAfterRecords(kind, timing)).toBe(50);
    for (const kind of ["assistant_text_delta", "assistant_thinking_delta"]) expect(pollAfterRecords(kind, timing)).toBe(100);
  });
});
