import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, HarnessHttpError, type HarnessClient } from "../../../src/client/index.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { bearerAuth } from "../../../src/http/bearer-auth.ts";
import { startTestServer, type TestServer } from "../../support/test-server.ts";

interface Call {
  method: string;
  url: string;
  lastEventId: string | null;
  status: number;
}

/** The global fetch, recording each request; `wrap` may replace the response. */
function recordingFetch(wrap?: (res: Response, call: Call) => Response) {
  const calls: Call[] = [];
  const spy: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    const call: Call = {
      method: init?.method ?? "GET",
      url: String(input),
      lastEventId: new URL(String(input)).searchParams.get("lastEventId"),
      status: res.status,
    };
    calls.push(call);
    return wrap ? wrap(res, call) : res;
  };
  return { fetch: spy, calls, gets: () => calls.filter((c) => c.method === "GET") };
}

async function collect(iterable: AsyncIterable<ConversationRecord>, each?: (r: ConversationRecord) => void) {
  const out: ConversationRecord[] = [];
  for await (const r of iterable) {
    out.push(r);
    each?.(r);
  }
  return out;
}

function expectOnceInOrder(records: ConversationRecord[]) {
  const ids = records.map((r) => r.id);
  expect(new Set(ids).size).toBe(ids.length);
  expect([...ids].sort()).toEqual(ids);
}

const user = (body: string) => ({ kind: "user" as const, body });
const until = (check: () => boolean, ms = 10_000) =>
  new Promise<void>((resolve, reject) => {
    const deadline = Date.now() + ms;
    const tick = () => (check() ? resolve() : Date.now() > deadline ? reject(new Error("until: timed out")) : setTimeout(tick, 10));
    tick();
  });

let h: TestServer;
let client: HarnessClient;
beforeAll(async () => {
  h = await startTestServer({ retryMs: 20 });
  client = createClient({ baseUrl: h.url });
});
afterAll(async () => {
  await h?.close();
});

let seq = 0;
const fresh = () => `c-${++seq}`;

describe("client: dispatch and stream", () => {
  it("streams a dispatched conversation whole, once, in order, and stops by itself once idle", async () => {
    const spy = recordingFetch();
    const c = createClient({ baseUrl: h.url, fetch: spy.fetch });
    const i = fresh();
    const ids = await c.dispatch("assistant", i, user("what time is it?"));
    expect(ids).toEqual({ submissionId: expect.any(String), conversationId: expect.any(String) });
    const got = await collect(c.stream("assistant", i));
    expect(got).toEqual(await h.runtime.records(ids.conversationId));
    expectOnceInOrder(got);
    expect(got.map((r) => r.kind)).toEqual(expect.arrayContaining(["assistant_tool_call", "tool_outcome"]));
    expect(got.at(-1)).toMatchObject({ kind: "submission_settled", submissionId: ids.submissionId });
    // It ended on the server's word: the last request was answered 204.
    expect(spy.gets().at(-1)!.status).toBe(204);
  });

  it("tails a live run from its first record to its settlement, across two submissions", async () => {
    const i = fresh();
    h.gate.close();
    const first = await client.dispatch("assistant", i, user("[hold] first of two"));
    const second = await client.dispatch("assistant", i, user("second of two"));
    await h.gate.entered();
    const seen: ConversationRecord[] = [];
    const reading = collect(client.stream("assistant", i), (r) => seen.push(r));
    await until(() => seen.some((r) => r.kind === "user_message"));
    h.gate.release();
    const got = await reading;
    expect(got).toEqual(await h.runtime.records(first.conversationId));
    expectOnceInOrder(got);
    const settled = got.filter((r) => r.kind === "submission_settled").map((r) => r.submissionId);
    expect(settled).toEqual([first.submissionId, second.submissionId]);
  });

  it("replays strictly after `after`, and yields nothing when caught up on an idle session", async () => {
    const i = fresh();
    const ids = await client.dispatch("assistant", i, user("hello"));
    await h.runtime.wait(ids.submissionId);
    const all = await h.runtime.records(ids.conversationId);
    expect(await collect(client.stream("assistant", i, { after: all[2]!.id }))).toEqual(all.slice(3));
    expect(await collect(client.stream("assistant", i, { after: all.at(-1)!.id }))).toEqual([]);
  });

  it("addresses sessions and instance ids with reserved characters", async () => {
    const i = `${fresh()}:child~1`;
    const a = await client.dispatchAndWait("assistant", i, user("in a"), { session: "s.a" });
    const b = await client.dispatchAndWait("assistant", i, user("in b"), { session: "s.b" });
    expect(a.conversationId).not.toBe(b.conversationId);
    const inA = await collect(client.stream("assistant", i, { session: "s.a" }));
    expect(inA).toEqual(await h.runtime.records(a.conversationId));
    expect(inA.every((r) => r.session === "s.a")).toBe(true);
  });

  it("breaking out of the loop closes the stream; aborting the signal throws its reason", async () => {
    const i = fresh();
    h.gate.close();
    await client.dispatch("assistant", i, user("[hold] stop reading early"));
    await h.gate.entered();
    for await (const r of client.stream("assistant", i)) {
      expect(r.kind).toBe("conversation_created");
      break;
    }
    const controller = new AbortController();
    const reading = collect(client.stream("assistant", i, { signal: controller.signal }), () =>
      controller.abort(new Error("enough")),
    );
    await expect(reading).rejects.toThrow("enough");
    h.gate.release();
  });
});

describe("client: reconnects", () => {
  it("resumes with Last-Event-ID across server-ended streams: no gap, no duplicate", async () => {
    const quick = await startTestServer({ maxStreamMs: 150, retryMs: 20 });
    try {
      const spy = recordingFetch();
      const c = createClient({ baseUrl: quick.url, fetch: spy.fetch });
      const i = fresh();
      const ids = await c.dispatch("assistant", i, user("[hold] a reply long enough to have several deltas in it"));
      await quick.gate.entered();
      const seen: ConversationRecord[] = [];
      const reading = collect(c.stream("assistant", i), (r) => seen.push(r));
      // Let the server end a few streams while the run is held (busy, nothing new to send).
      await until(() => spy.gets().length >= 3);
      quick.gate.release();
      const got = await reading;
      expect(got).toEqual(await quick.runtime.records(ids.conversationId));
      expectOnceInOrder(got);
      // Every reconnect resumed from the last record read before it.
      const gets = spy.gets();
      const resumed = gets.slice(1).map((g) => g.lastEventId);
      expect(resumed.every((id) => id !== null && got.some((r) => r.id === id))).toBe(true);
      // The server ended the busy streams (200s); the idle one ended with a 204.
      expect(gets.slice(0, -1).every((g) => g.status === 200)).toBe(true);
      expect(gets.at(-1)!.status).toBe(204);
    } finally {
      await quick.close();
    }
  });

  it("resumes after a connection that drops mid-event, from the last complete record", async () => {
    const i = fresh();
    const ids = await client.dispatchAndWait("assistant", i, user("what time is it? tell me in a long sentence"));
    const all = await h.runtime.records(ids.conversationId);
    // The first two connections die after 700 bytes: inside a frame, after an `id:` line or not.
    const spy = recordingFetch((res, call) => {
      if (call.status !== 200 || spy.gets().length > 2) return res;
      return new Response(cutAfter(res.body!, 700), { status: 200, headers: res.headers });
    });
    const c = createClient({ baseUrl: h.url, fetch: spy.fetch });
    const got = await collect(c.stream("assistant", i));
    expect(got).toEqual(all);
    const [, second, third] = spy.gets();
    for (const resume of [second!, third!]) {
      expect(all.slice(1, -1).map((r) => r.id)).toContain(resume.lastEventId);
    }
    expect(third!.lastEventId! > second!.lastEventId!).toBe(true);
  });

  it("gives up on a first connection that fails, without retrying", async () => {
    let calls = 0;
    const c = createClient({
      baseUrl: h.url,
      fetch: async () => {
        calls++;
        throw new TypeError("fetch failed");
      },
    });
    await expect(collect(c.stream("assistant", "x"))).rejects.toThrow("fetch failed");
    expect(calls).toBe(1);
  });
});

describe("client: dispatchAndWait and waitForSettled", () => {
  it("answers the settled outcome from the ?wait=true 200", async () => {
    const spy = recordingFetch();
    const c = createClient({ baseUrl: h.url, fetch: spy.fetch });
    const settled = await c.dispatchAndWait("assistant", fresh(), user("hello there"));
    expect(settled.status).toBe("succeeded");
    expect(settled).toEqual({
      submissionId: expect.any(String),
      conversationId: expect.any(String),
      ...(await h.runtime.wait(settled.submissionId)),
    });
    expect(spy.gets()).toEqual([]);
  });

  it("after the server's maxRequestWaitMs (202) follows the stream to the settled record", async () => {
    const impatient = await startTestServer({ maxRequestWaitMs: 1, retryMs: 20 });
    try {
      const spy = recordingFetch();
      const c = createClient({ baseUrl: impatient.url, fetch: spy.fetch });
      const i = fresh();
      const waiting = c.dispatchAndWait("assistant", i, user("[hold] wait for me"), { dispatchId: `d-${i}` });
      await impatient.gate.entered();
      await until(() => spy.gets().length > 0);
      expect(spy.calls[0]!.status).toBe(202);
      impatient.gate.release();
      const settled = await waiting;
      expect(settled).toEqual({ submissionId: `d-${i}`, conversationId: expect.any(String), status: "succeeded", usage: expect.any(Object) });
      const last = (await impatient.runtime.records(settled.conversationId)).at(-1)!;
      expect(last).toMatchObject({ kind: "submission_settled", submissionId: `d-${i}`, payload: { status: "succeeded" } });
    } finally {
      await impatient.close();
    }
  });

  it("waitForSettled skips other submissions' settlements and reports the records on the way", async () => {
    const i = fresh();
    h.gate.close();
    const first = await client.dispatch("assistant", i, user("[hold] one"));
    const second = await client.dispatch("assistant", i, user("two"));
    const seen: ConversationRecord[] = [];
    const waiting = client.waitForSettled("assistant", i, second.submissionId, { onRecord: (r) => seen.push(r) });
    await h.gate.entered();
    h.gate.release();
    const settled = await waiting;
    expect(settled).toEqual({ ...second, status: "succeeded", usage: expect.any(Object) });
    expect(seen.filter((r) => r.kind === "submission_settled").map((r) => r.submissionId)).toEqual([
      first.submissionId,
      second.submissionId,
    ]);
    expect(seen).toEqual(await h.runtime.records(first.conversationId));
  });

  it("waitForSettled keeps looking while the session is idle, until aborted", async () => {
    const i = fresh();
    const ids = await client.dispatchAndWait("assistant", i, user("hi"));
    const controller = new AbortController();
    const waiting = client.waitForSettled("assistant", i, "no-such-submission", { signal: controller.signal });
    setTimeout(() => controller.abort(new Error("stop waiting")), 400);
    await expect(waiting).rejects.toThrow("stop waiting");
    // And it finds one that settled before it started.
    expect(await client.waitForSettled("assistant", i, ids.submissionId)).toEqual(ids);
  });
});

describe("client: compact", () => {
  it("compact admits a manual compaction; compactAndWait resolves with its outcome; 404 without a conversation", async () => {
    const instance = `compact-${Date.now()}`;
    for (const body of ["one", "two"]) await client.dispatchAndWait("assistant", instance, user(body));
    const ids = await client.compact("assistant", instance);
    const settled = await client.waitForSettled("assistant", instance, ids.submissionId);
    expect(settled).toMatchObject({ ...ids, status: "succeeded", result: { compacted: true } });
    await client.dispatchAndWait("assistant", instance, user("three"));
    expect(await client.compactAndWait("assistant", instance, { session: "default" })).toMatchObject({ status: "succeeded", result: { compacted: true } });
    const kinds = (await collect(client.stream("assistant", instance))).filter((r) => r.kind === "compaction");
    expect(kinds).toHaveLength(2);
    const missing = await client.compact("assistant", `${instance}-none`).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(HarnessHttpError);
    expect(missing).toMatchObject({ status: 404, code: "conversation_not_found" });
  });
});

describe("client: steer, follow-up and errors", () => {
  it("steers and follows up a run in flight", async () => {
    const i = fresh();
    h.gate.close();
    const ids = await client.dispatch("assistant", i, user("[hold] steer me"));
    await h.gate.entered();
    await client.steer("assistant", i, "turn left");
    await client.followUp("assistant", i, "and then stop");
    h.gate.release();
    await h.runtime.wait(ids.submissionId);
    const injected = (await h.runtime.records(ids.conversationId)).filter(
      (r) => r.kind === "user_message" && r.payload.origin !== undefined,
    );
    expect(injected.map((r) => r.kind === "user_message" && [r.payload.origin, r.payload.body])).toEqual([
      ["steer", "turn left"],
      ["followUp", "and then stop"],
    ]);
  });

  it("cancels a running submission mid-stream; the stream ends with its cancelled settlement", async () => {
    const i = fresh();
    h.gate.close();
    const ids = await client.dispatch("assistant", i, user("[hold] stop me"));
    await h.gate.entered();
    const seen: ConversationRecord[] = [];
    const reading = collect(client.stream("assistant", i), (r) => seen.push(r));
    await until(() => seen.some((r) => r.kind === "user_message"));
    expect(await client.cancel("assistant", i, ids.submissionId, { reason: "user pressed stop" })).toEqual({
      submissionId: ids.submissionId,
      status: "cancelling",
    });
    const got = await reading;
    const outcome = { status: "failed", error: "cancelled: user pressed stop", errorCode: "cancelled" };
    expect(got.at(-1)).toMatchObject({ kind: "submission_settled", submissionId: ids.submissionId, payload: outcome });
    expect(await client.cancel("assistant", i, ids.submissionId)).toMatchObject({ submissionId: ids.submissionId, status: "cancelled", outcome });
    h.gate.release();
    const err = await client.cancel("assistant", i, "nope").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HarnessHttpError);
    expect(err).toMatchObject({ status: 404, code: "submission_not_found" });
  });

  it("steer with nothing running → HarnessHttpError 409 no_run_in_flight", async () => {
    const i = fresh();
    await client.dispatchAndWait("assistant", i, user("done already"));
    for (const inject of [client.steer, client.followUp]) {
      const err = await inject("assistant", i, "too late").catch((e: unknown) => e);
      expect(err).toBeInstanceOf(HarnessHttpError);
      expect(err).toMatchObject({ status: 409, code: "no_run_in_flight", name: "HarnessHttpError" });
      expect((err as Error).message).not.toBe("");
    }
  });

  it("maps 404 and 400 answers to typed errors", async () => {
    const refused = async (p: Promise<unknown>) => {
      const err = await p.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(HarnessHttpError);
      const { status, code } = err as HarnessHttpError;
      return { status, code };
    };
    expect(await refused(client.dispatch("nobody", "x", user("hi")))).toEqual({ status: 404, code: "unknown_agent" });
    expect(await refused(collect(client.stream("assistant", fresh())))).toEqual({ status: 404, code: "conversation_not_found" });
    expect(await refused(client.dispatch("assistant", "a b", user("hi")))).toEqual({ status: 400, code: "invalid_request" });
    const bogus = { kind: "bogus", body: "hi" } as unknown as ReturnType<typeof user>;
    expect(await refused(client.dispatch("assistant", fresh(), bogus))).toEqual({ status: 400, code: "invalid_dispatch" });
    expect(await refused(client.dispatchAndWait("assistant", fresh(), user("")))).toEqual({ status: 400, code: "invalid_dispatch" });
    const i = fresh();
    await client.dispatchAndWait("assistant", i, user("x"));
    expect(await refused(collect(client.stream("assistant", i, { after: "not-an-id" })))).toEqual({ status: 400, code: "invalid_request" });
    expect(await refused(client.dispatch("assistant", i, user("one"), { dispatchId: "same" }).then(() =>
      client.dispatch("assistant", i, user("other"), { dispatchId: "same" }),
    ))).toEqual({ status: 409, code: "dispatch_conflict" });
  });

  it("an answer that is not the harness's is unexpected_response", async () => {
    const html = createClient({
      baseUrl: "http://harness.invalid",
      fetch: async () => new Response("<h1>Bad Gateway</h1>", { status: 502, headers: { "content-type": "text/html" } }),
    });
    await expect(html.dispatch("a", "b", user("c"))).rejects.toMatchObject({
      status: 502,
      code: "unexpected_response",
      message: "HTTP 502: <h1>Bad Gateway</h1>",
    });
    const notSse = createClient({ baseUrl: "http://harness.invalid", fetch: async () => Response.json({ ok: true }) });
    await expect(collect(notSse.stream("a", "b"))).rejects.toMatchObject({ status: 200, code: "unexpected_response" });
  });

  it("sends the configured headers (a function is called per request)", async () => {
    const token = "s3cret";
    const authed = await startTestServer({ middleware: [bearerAuth({ token })] });
    try {
      const without = createClient({ baseUrl: authed.url });
      await expect(without.dispatch("assistant", "x", user("hi"))).rejects.toMatchObject({ status: 401, code: "unauthorized" });
      let asked = 0;
      const c = createClient({
        baseUrl: `${authed.url}/`,
        headers: async () => {
          asked++;
          return { authorization: `Bearer ${token}` };
        },
      });
      const settled = await c.dispatchAndWait("assistant", "x", user("hi"));
      const got = await collect(c.stream("assistant", "x"));
      expect(got.at(-1)).toMatchObject({ kind: "submission_settled", submissionId: settled.submissionId });
      expect(asked).toBeGreaterThanOrEqual(2);
    } finally {
      await authed.close();
    }
  });
});

/** A body that errors after `bytes` bytes, like a connection dropped mid-stream. */
function cutAfter(body: ReadableStream<Uint8Array>, bytes: number): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) return controller.close();
      const room = bytes - sent;
      if (value.byteLength >= room) {
        controller.enqueue(value.subarray(0, room));
        await reader.cancel();
        controller.error(new TypeError("terminated"));
        return;
      }
      sent += value.byteLength;
      controller.enqueue(value);
    },
    cancel: () => reader.cancel(),
  });
}

describe("client: a harness that cannot be reached", () => {
  it("throws HarnessHttpError unreachable (status 0) naming the URL, with the network error as cause, from every method", async () => {
    const { createServer } = await import("node:net");
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const { port } = probe.address() as { port: number };
    await new Promise((resolve) => probe.close(resolve));
    const c = createClient({ baseUrl: `http://127.0.0.1:${port}/` });
    const calls: [string, () => Promise<unknown>][] = [
      ["dispatch", () => c.dispatch("assistant", "down", { kind: "user", body: "hi" })],
      ["stream", () => collect(c.stream("assistant", "down"))],
      ["steer", () => c.steer("assistant", "down", "x")],
      ["listSubmissions", () => c.listSubmissions("assistant", "down")],
    ];
    for (const [name, call] of calls) {
      const err = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, name).toBeInstanceOf(HarnessHttpError);
      const e = err as HarnessHttpError;
      expect(e.code, name).toBe("unreachable");
      expect(e.status, name).toBe(0);
      expect(e.url, name).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/agents/assistant/down`));
      expect(e.message, name).toMatch(new RegExp(`^cannot reach the harness at http://127\\.0\\.0\\.1:${port}/agents/assistant/down\\S*: fetch failed: connect ECONNREFUSED`));
      expect(e.cause, name).toBeInstanceOf(TypeError);
    }
  });

  it("an aborted request stays an abort, not an unreachable harness", async () => {
    const c = createClient({ baseUrl: "http://127.0.0.1:9" });
    const controller = new AbortController();
    controller.abort(new Error("stop"));
    const err = await c.dispatch("assistant", "x", { kind: "user", body: "hi" }, { signal: controller.signal }).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(HarnessHttpError);
  });
});
