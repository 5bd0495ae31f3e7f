/**
 * Admission's checks in the embedded shape, through a real server: an invalid result schema, an
 * unknown attachment, a dispatch id reused for another target, ids a URL cannot carry, and
 * requests Node's HTTP parser refuses. Each refusal is a 4xx JSON `{error, code}` and leaves
 * the store exactly as it was (no submission, no conversation, no record).
 */
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SessionKey } from "../../../src/store/submission.ts";
import { snapshot, startTestServer, type TestServer } from "../../support/test-server.ts";

let h: TestServer;
beforeAll(async () => {
  h = await startTestServer({ maxRequestWaitMs: 5_000 });
});
afterAll(async () => {
  await h?.close();
});

let seq = 0;
const fresh = (prefix = "adm") => `${prefix}-${++seq}`;
const keyOf = (instance: string, session = "default"): SessionKey => ({ agent: "assistant", instance, session });

function post(path: string, body: unknown): Promise<Response> {
  return fetch(`${h.url}${path}`, { method: "POST", body: JSON.stringify(body) });
}

async function expectError(res: Response, status: number, code: string, message?: RegExp | string) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  const body = (await res.json()) as { error: string; code: string };
  expect(body.code).toBe(code);
  if (message) expect(body.error).toMatch(message);
  return body;
}

/** The store's observable state plus whether each of `keys` has a conversation. */
async function state(keys: SessionKey[]): Promise<string> {
  const conversations = await Promise.all(
    keys.map((key) => h.store.getConversation(key).then((c) => c.id, (err: { code?: string }) => err.code)),
  );
  return JSON.stringify({ store: await snapshot(h.store), conversations });
}

/** Sends `request` and expects the refusal, with the store unchanged (`keys` still without conversations). */
async function refused(keys: SessionKey[], request: () => Promise<Response>, status: number, code: string, message?: RegExp | string) {
  const before = await state(keys);
  const body = await expectError(await request(), status, code, message);
  expect(await state(keys), "a refused request stores nothing").toBe(before);
  return body;
}

describe("admission checks (embedded)", () => {
  it("an invalid resultSchema is a 400 invalid_dispatch with the compiler's message, in both routes", async () => {
    const cases: [unknown, RegExp][] = [
      [[], /must be object,boolean/],
      [{ type: 12 }, /type must be equal to one of the allowed values/],
      [{ pattern: "(" }, /pattern "\(" is not supported: missing closing \)/],
      [{ minLength: -1 }, /minLength must be >= 0/],
      [{ $ref: "#/nowhere" }, /can't resolve reference #\/nowhere/],
      [{ type: "object", properties: { a: { items: 3 } } }, /items must be object,boolean/],
    ];
    for (const [schema, message] of cases) {
      const instance = fresh();
      for (const wait of ["", "?wait=true"]) {
        const body = await refused(
          [keyOf(instance)],
          () => post(`/agents/assistant/${instance}${wait}`, { kind: "user", body: "give me JSON", resultSchema: schema }),
          400,
          "invalid_dispatch",
          message,
        );
        expect(body.error, JSON.stringify(schema)).toMatch(/^invalid resultSchema: /);
      }
      // The runtime API refuses it the same way.
      await expect(h.runtime.dispatch({ agent: "assistant", instance, message: { kind: "user", body: "x", resultSchema: schema as object } })).rejects.toMatchObject({
        code: "invalid_dispatch",
        message: expect.stringMatching(message),
      });
    }
  });

  it("a valid schema is admitted, and two schemas sharing an $id both compile", async () => {
    for (const schema of [{ $id: "result", type: "object" }, { $id: "result", type: "string" }]) {
      // Settled before the next test snapshots the store.
      const res = await post(`/agents/assistant/${fresh()}?wait=true`, { kind: "user", body: "x", resultSchema: schema });
      expect(res.status, JSON.stringify(schema)).toBe(200);
    }
  });

  it("an attachment the store does not hold is a 400 naming its digest; a stored one is admitted", async () => {
    const stored = await h.store.putAttachment("text/plain", new TextEncoder().encode("the notes"));
    const missing = `sha256:${"e".repeat(64)}`;
    const instance = fresh();
    await refused(
      [keyOf(instance)],
      () => post(`/agents/assistant/${instance}`, { kind: "user", body: "read these", attachments: [stored, { digest: missing, mediaType: "text/plain", size: 3 }] }),
      400,
      "attachment_not_found",
      missing,
    );
    const ok = await post(`/agents/assistant/${instance}?wait=true`, { kind: "user", body: "read these", attachments: [stored] });
    expect(ok.status).toBe(200);
  });

  it("a dispatch id reused for another target or body is a 409 that stores nothing (no conversation for the target)", async () => {
    const [a, b, c] = [fresh("a"), fresh("b"), fresh("c")];
    const dispatchId = fresh("d");
    const first = await post(`/agents/assistant/${a}`, { kind: "user", body: "hello", dispatchId });
    expect(first.status).toBe(202);
    const ids = (await first.json()) as { submissionId: string };
    await h.runtime.wait(ids.submissionId);

    const others = [keyOf(b), keyOf(c), keyOf(a, "other")];
    // The same body to another instance (today: 202 with a's ids, the message never runs in b).
    await refused(others, () => post(`/agents/assistant/${b}`, { kind: "user", body: "hello", dispatchId }), 409, "dispatch_conflict");
    // Another body to another instance (today: 409, yet c's conversation was created).
    await refused(others, () => post(`/agents/assistant/${c}?wait=true`, { kind: "user", body: "other", dispatchId }), 409, "dispatch_conflict");
    // Another session of the same instance.
    await refused(others, () => post(`/agents/assistant/${a}`, { kind: "user", body: "hello", session: "other", dispatchId }), 409, "dispatch_conflict");
    const stream = await fetch(`${h.url}/agents/assistant/${c}`);
    await expectError(stream, 404, "conversation_not_found");

    // The same target and body is still a replay.
    const again = await post(`/agents/assistant/${a}`, { kind: "user", body: "hello", dispatchId });
    expect(again.status).toBe(202);
    expect(((await again.json()) as { submissionId: string }).submissionId).toBe(ids.submissionId);
  });

  it("instance ids `.` and `..` are refused by the id rule (a URL would normalise them away)", async () => {
    for (const instance of [".", ".."]) {
      await expect(h.runtime.dispatch({ agent: "assistant", instance, message: { kind: "user", body: "x" } })).rejects.toMatchObject({ code: "invalid_request" });
      await expect(h.runtime.dispatch({ agent: "assistant", instance: "ok", dispatchId: instance, message: { kind: "user", body: "x" } })).rejects.toMatchObject({
        code: "invalid_request",
      });
    }
    for (const instance of ["...", ".a", "a..b"]) {
      const res = await post(`/agents/assistant/${instance}`, { kind: "user", body: "x" });
      expect(res.status, instance).toBe(202);
    }
  });

  it("a request refused before the app (a backslash in the path, a control character in a header) answers JSON {error, code}", async () => {
    const requests = [
      // Node's adapter cannot make a Request of it (it would answer an empty 400).
      "GET /agents/assistant/a\\b HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
      // Node's HTTP parser refuses it (it would write an empty 400).
      "POST /agents/assistant/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Note: a\u0001b\r\nContent-Length: 2\r\n\r\n{}",
    ];
    for (const raw of requests) {
      const before = await snapshot(h.store);
      const answer = await rawRequest(raw);
      const [head, body] = answer.split("\r\n\r\n");
      expect(head, raw).toMatch(/^HTTP\/1\.1 400 /);
      expect(head).toMatch(/content-type: application\/json/i);
      const json = JSON.parse(body!) as { error: string; code: string };
      expect(json.code).toBe("invalid_request");
      expect(json.error).toMatch(/^malformed HTTP request: /);
      expect(await snapshot(h.store)).toBe(before);
    }
  });
});

/** Writes raw bytes to the server and reads until it closes the connection. */
function rawRequest(raw: string): Promise<string> {
  const { port } = new URL(h.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1");
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk) => (text += chunk));
    socket.on("end", () => resolve(text));
    socket.on("error", reject);
    socket.write(raw);
  });
}
