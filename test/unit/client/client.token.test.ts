/**
 * The client's `token` (issue 34): a bearer token as a string or a function asked per request and
 * per stream (re)connect, against a real server with authentication on (ADR 0043). A refused
 * token is `unauthorized`; a stream whose reconnect is refused asks the token once more.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, HarnessHttpError } from "../../../src/client/index.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { startTestServer, type TestServer } from "../../support/test-server.ts";

/** The tokens the server accepts now: a test "expires" one by deleting it. */
const valid = new Map<string, string>();
const authenticate = (request: Request) => {
  const token = /^Bearer (.+)$/.exec(request.headers.get("authorization") ?? "")?.[1];
  const id = token === undefined ? undefined : valid.get(token);
  return id === undefined ? null : { id };
};

let h: TestServer;
beforeAll(async () => {
  // The server ends every stream quickly, so a followed run reconnects several times.
  h = await startTestServer({ maxStreamMs: 150, retryMs: 20, auth: { authenticate } });
});
afterAll(async () => {
  await h?.close();
});

async function collect(iterable: AsyncIterable<ConversationRecord>): Promise<ConversationRecord[]> {
  const out: ConversationRecord[] = [];
  for await (const r of iterable) out.push(r);
  return out;
}
const user = (body: string) => ({ kind: "user" as const, body });
const until = (check: () => boolean, ms = 10_000) =>
  new Promise<void>((resolve, reject) => {
    const deadline = Date.now() + ms;
    const tick = () => (check() ? resolve() : Date.now() > deadline ? reject(new Error("until: timed out")) : setTimeout(tick, 10));
    tick();
  });

describe("client: token", () => {
  it("a string token is the bearer of every request; none or a wrong one is a typed `unauthorized` 401", async () => {
    valid.set("alice-1", "alice");
    const alice = createClient({ baseUrl: h.url, token: "alice-1" });
    const settled = await alice.dispatchAndWait("assistant", "alice", user("hello"));
    expect(settled.status).toBe("succeeded");
    expect((await alice.listSubmissions("assistant", "alice")).submissions).toHaveLength(1);

    for (const c of [createClient({ baseUrl: h.url }), createClient({ baseUrl: h.url, token: "forged" })]) {
      const refused = await c.dispatch("assistant", "alice", user("x")).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(HarnessHttpError);
      expect(refused).toMatchObject({ status: 401, code: "unauthorized" });
      await expect(collect(c.stream("assistant", "alice"))).rejects.toMatchObject({ status: 401, code: "unauthorized" });
    }
    // The policy still applies to a signed-in caller: alice's token does not reach bob's instance.
    await expect(alice.dispatch("assistant", "bob", user("x"))).rejects.toMatchObject({ status: 403, code: "forbidden" });
  });

  it("a token function is asked per request, and the token wins over an authorization header", async () => {
    valid.set("carol-1", "carol");
    const asked: boolean[] = [];
    const c = createClient({
      baseUrl: h.url,
      headers: { authorization: "Bearer stale" },
      token: async ({ refresh }) => {
        asked.push(refresh);
        return "carol-1";
      },
    });
    await c.dispatchAndWait("assistant", "carol", user("hi"));
    await c.listSubmissions("assistant", "carol");
    expect(asked).toEqual([false, false]);
  });

  it("every stream reconnect asks the token again, so a token refreshed meanwhile is the one sent", async () => {
    valid.set("dave-1", "dave");
    let current = "dave-1";
    const sent: string[] = [];
    const c = createClient({ baseUrl: h.url, token: () => current });
    const spy = createClient({
      baseUrl: h.url,
      token: () => current,
      fetch: async (input, init) => {
        if (String(input).includes("/agents/assistant/dave") && (init?.method ?? "GET") === "GET") {
          sent.push(new Headers(init?.headers).get("authorization") ?? "");
        }
        return fetch(input, init);
      },
    });
    const ids = await c.dispatch("assistant", "dave", user("[hold] a reply long enough for several deltas"));
    await h.gate.entered();
    const reading = collect(spy.stream("assistant", "dave"));
    await until(() => sent.length >= 2);
    // The first token expires and a new one is issued; the next reconnect carries the new one.
    valid.set("dave-2", "dave");
    current = "dave-2";
    valid.delete("dave-1");
    const before = sent.length;
    await until(() => sent.length >= before + 2);
    h.gate.release();
    h.gate.close();
    const got = await reading;
    expect(got).toEqual(await h.runtime.records(ids.conversationId));
    expect(sent.at(0)).toBe("Bearer dave-1");
    expect(sent.at(-1)).toBe("Bearer dave-2");
  });

  it("a reconnect refused with 401 asks the token once more with refresh: true, and goes on with the new one", async () => {
    valid.set("erin-1", "erin");
    let current = "erin-1";
    const asked: boolean[] = [];
    const c = createClient({
      baseUrl: h.url,
      // A caching provider: it answers the cached token until asked to refresh.
      token: ({ refresh }) => {
        asked.push(refresh);
        if (refresh) {
          current = "erin-2";
          valid.set("erin-2", "erin");
        }
        return current;
      },
    });
    const ids = await c.dispatch("assistant", "erin", user("[hold] a reply long enough for several deltas"));
    await h.gate.entered();
    const reading = collect(c.stream("assistant", "erin"));
    // The dispatch, the first connection and a reconnect: the stream has connected once.
    await until(() => asked.length >= 3);
    valid.delete("erin-1");
    await until(() => asked.includes(true));
    h.gate.release();
    h.gate.close();
    const got = await reading;
    expect(got).toEqual(await h.runtime.records(ids.conversationId));
    // Asked once with refresh after the refusal, then with the new token as before.
    expect(asked.filter((r) => r)).toHaveLength(1);
    expect(asked.at(-1)).toBe(false);
  });

  it("a reconnect refused again after the refresh fails with `unauthorized` (asked once, not in a loop)", async () => {
    valid.set("fay-1", "fay");
    const asked: boolean[] = [];
    const c = createClient({
      baseUrl: h.url,
      token: ({ refresh }) => {
        asked.push(refresh);
        return "fay-1";
      },
    });
    await c.dispatch("assistant", "fay", user("[hold] a reply long enough for several deltas"));
    await h.gate.entered();
    const reading = collect(c.stream("assistant", "fay")).catch((e: unknown) => e);
    await until(() => asked.length >= 3);
    valid.delete("fay-1");
    const err = await reading;
    h.gate.release();
    h.gate.close();
    expect(err).toMatchObject({ status: 401, code: "unauthorized" });
    expect(asked.filter((r) => r)).toEqual([true]);
  });

  it("a 401 from in front of the harness (API Gateway's authorizer body) is `unauthorized` too", async () => {
    const gateway: Server = createServer((_req, res) => res.writeHead(401, { "content-type": "application/json" }).end('{"message":"Unauthorized"}'));
    await new Promise<void>((resolve) => gateway.listen(0, "127.0.0.1", resolve));
    try {
      const c = createClient({ baseUrl: `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`, token: "expired" });
      await expect(c.dispatch("assistant", "x", user("x"))).rejects.toMatchObject({ status: 401, code: "unauthorized" });
    } finally {
      await new Promise<void>((resolve) => gateway.close(() => resolve()));
    }
  });

  it("token and sigv4 together are refused: both would set the Authorization header", () => {
    expect(() => createClient({ baseUrl: h.url, token: "t", sigv4: { region: "us-east-1" } })).toThrow(TypeError);
  });
});
