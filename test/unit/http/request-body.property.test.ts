import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Hono } from "hono";
import type { Store } from "../../../src/store/store.ts";
import type { Runtime } from "../../../src/runtime/runtime.ts";
import { appFor, snapshot, startRuntime } from "../../support/test-server.ts";

const MAX_BODY = 4096;
let runtime: Runtime;
let store: Store;
let app: Hono;
let lastRecordId: string;

beforeAll(async () => {
  ({ runtime, store } = await startRuntime());
  app = appFor(runtime, { maxBodyBytes: MAX_BODY });
  // A settled conversation, so the snapshot has content and GETs have something to refuse on.
  const { submissionId, conversationId } = await runtime.dispatch({
    agent: "assistant",
    instance: "seeded",
    dispatchId: SEEDED_DISPATCH,
    message: { kind: "user", body: "what time is it?" },
  });
  await runtime.wait(submissionId);
  lastRecordId = (await runtime.records(conversationId)).at(-1)!.id;
});
afterAll(async () => {
  await runtime?.close();
});

/** The dispatch id of the seeded conversation's submission: reused for any other target → 409. */
const SEEDED_DISPATCH = "seeded-dispatch";

/** Instance ids a malformed request may name; none may end up with a conversation. */
const INSTANCES = ["fresh-a", "fresh-b", "t:1", "x.y~z"];

const notJsonText = fc.oneof(
  fc.string().filter((s) => {
    try {
      JSON.parse(s);
      return false;
    } catch {
      return true;
    }
  }),
  fc.constantFrom("", " ", "{", '{"kind":"user",', "kind=user&body=hi", "\u0000", "{'kind':'user'}", "[", "nul"),
);
const jsonNonObject = fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null), fc.string(), fc.array(fc.jsonValue()));
const notAString = fc.oneof(fc.integer(), fc.boolean(), fc.array(fc.string()), fc.dictionary(fc.string(), fc.string()));
const extras = fc.dictionary(
  fc.string({ minLength: 1, maxLength: 8 }).filter((k) => !["kind", "body", "signal", "attachments", "resultSchema", "resultRetries", "session", "dispatchId"].includes(k) && k !== "__proto__"),
  fc.jsonValue({ maxDepth: 2 }),
  { maxKeys: 3 },
);
const goodUser = { kind: "user", body: "hi" };

/** JSON Schemas (objects and arrays) that ajv refuses to compile. */
const uncompilableSchema: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom([], [{}], { type: 12 }, { pattern: "(" }, { minLength: -1 }, { $ref: "#/nowhere" }, { items: 3 }, { required: "x" }, { properties: [] }),
  fc.record({ type: fc.oneof(fc.integer(), fc.string().filter((t) => !["string", "number", "integer", "boolean", "object", "array", "null"].includes(t))) }),
  fc.record({ minLength: fc.integer({ max: -1 }) }),
  fc.record({ maxItems: fc.oneof(fc.integer({ max: -1 }), fc.string()) }),
  fc.record({ enum: fc.oneof(fc.string(), fc.integer()) }),
  fc.record({ pattern: fc.constantFrom("(", "[", "a{2,1}", "\\", "(?<", "*") }),
  fc.record({ type: fc.constant("object"), properties: fc.dictionary(fc.string({ minLength: 1, maxLength: 4 }).filter((k) => k !== "__proto__"), fc.constantFrom(3, "x", [1]), { minKeys: 1, maxKeys: 2 }) }),
);

/** An attachment ref of the right shape whose digest the store does not hold. */
const unknownAttachment = fc.record({
  digest: fc.stringMatching(/^[0-9a-f]{64}$/).map((hex) => `sha256:${hex}`),
  mediaType: fc.constantFrom("text/plain", "image/png", "application/pdf"),
  size: fc.nat(),
});

/** Dispatch bodies that must be refused (each arm breaks one rule for sure). */
const badDispatchObject: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  // unknown or missing kind
  fc.record({ kind: fc.oneof(fc.string().filter((k) => k !== "user" && k !== "signal"), notAString), body: fc.string() }),
  fc.record({ body: fc.string({ minLength: 1 }) }),
  // missing, empty or non-string body
  fc.record({ kind: fc.constantFrom("user", "signal"), signal: fc.constant({ type: "t" }) }),
  fc.record({ kind: fc.constantFrom("user", "signal"), body: fc.oneof(fc.constant(""), notAString), signal: fc.constant({ type: "t" }) }),
  // signal without a usable type
  fc.record({
    kind: fc.constant("signal"),
    body: fc.string({ minLength: 1 }),
    signal: fc.oneof(fc.constant({}), fc.record({ type: fc.oneof(fc.constant(""), notAString) }), fc.string(), fc.integer(), fc.array(fc.string())),
  }),
  fc.record({ kind: fc.constant("signal"), body: fc.string({ minLength: 1 }) }),
  fc.record({ kind: fc.constant("signal"), body: fc.string({ minLength: 1 }), signal: fc.record({ type: fc.constant("t"), sender: fc.oneof(fc.integer(), fc.array(fc.integer()), fc.dictionary(fc.string(), fc.integer(), { minKeys: 1 })) }) }),
  // user carrying signal fields
  fc.record({ kind: fc.constant("user"), body: fc.string({ minLength: 1 }), signal: fc.record({ type: fc.string() }) }),
  // bad retries, schema, attachments, session, dispatch id
  fc.record({ ...constants(goodUser), resultRetries: fc.oneof(fc.integer({ max: -1 }), fc.integer({ min: 11 }), fc.constant(1.5), fc.string()) }),
  fc.record({ ...constants(goodUser), resultSchema: fc.oneof(fc.string(), fc.integer(), fc.boolean()) }),
  // a result schema of the right type that does not compile
  fc.record({ ...constants(goodUser), resultSchema: uncompilableSchema }),
  // attachment refs of the right shape whose bytes the store does not hold
  fc.record({ ...constants(goodUser), attachments: fc.array(unknownAttachment, { minLength: 1, maxLength: 3 }) }),
  fc.record({ ...constants(goodUser), attachments: fc.oneof(fc.string(), fc.integer(), fc.constant([{}]), fc.constant([{ digest: "md5:x", mediaType: "a/b", size: 1 }]), fc.constant([{ digest: `sha256:${"a".repeat(64)}`, mediaType: "", size: 1 }]), fc.constant([{ digest: `sha256:${"a".repeat(64)}`, mediaType: "a/b", size: -1 }])) }),
  fc.record({ ...constants(goodUser), session: fc.oneof(notAString, fc.constantFrom("a b", "x/y", "é", "s".repeat(129))) }),
  fc.record({ ...constants(goodUser), dispatchId: fc.oneof(notAString, fc.constantFrom("a b", "x/y", "d".repeat(257))) }),
);

function constants<T extends Record<string, unknown>>(o: T): { [K in keyof T]: fc.Arbitrary<T[K]> } {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, fc.constant(v)])) as { [K in keyof T]: fc.Arbitrary<T[K]> };
}

const contentType = fc.constantFrom(undefined, "application/json", "application/x-www-form-urlencoded", "text/plain", "application/octet-stream", "multipart/form-data");

const badPathSegment = fc.oneof(
  fc.constantFrom("a%20b", "a%2Fb", "%C3%A9", "a%00", "x".repeat(257), "a%22b", "a%3Cb"),
  fc.stringMatching(/^[A-Za-z0-9]{1,5}[!$&'()*+,;=@]{1,3}$/),
);

interface Case {
  method: string;
  path: string;
  body?: string;
  headers: Record<string, string>;
  instance?: string;
}

const instance = fc.constantFrom(...INSTANCES);

const dispatchCase: fc.Arbitrary<Case> = fc
  .tuple(
    instance,
    fc.oneof(
      notJsonText,
      jsonNonObject.map((v) => JSON.stringify(v)),
      fc.tuple(badDispatchObject, extras).map(([o, e]) => JSON.stringify({ ...e, ...o })),
      fc.constant(JSON.stringify({ kind: "user", body: "x".repeat(MAX_BODY) })), // oversize request
    ),
    contentType,
    fc.boolean(),
  )
  .map(([inst, body, type, wait]) => ({
    method: "POST",
    path: `/agents/assistant/${inst}${wait ? "?wait=true" : ""}`,
    body,
    headers: (type ? { "content-type": type } : {}) as Record<string, string>,
    instance: inst,
  }));

const badPathCase: fc.Arbitrary<Case> = fc
  .tuple(fc.boolean(), badPathSegment, fc.constantFrom("", "/steer", "/followup"), fc.constantFrom("POST", "GET"))
  .map(([inAgent, seg, suffix, method]) => ({
    method: suffix ? "POST" : method,
    path: inAgent ? `/agents/${seg}/fresh-a${suffix}` : `/agents/assistant/${seg}${suffix}`,
    body: method === "GET" && !suffix ? undefined : JSON.stringify(goodUser),
    headers: {},
  }));

const unknownAgentCase: fc.Arbitrary<Case> = fc
  .tuple(fc.stringMatching(/^[a-z]{1,10}$/).filter((a) => a !== "assistant"), instance, fc.constantFrom("", "/steer", "/followup"))
  .map(([agent, inst, suffix]) => ({ method: "POST", path: `/agents/${agent}/${inst}${suffix}`, body: JSON.stringify({ ...goodUser, body: "b" }), headers: {}, instance: inst }));

const injectCase: fc.Arbitrary<Case> = fc
  .tuple(
    fc.constantFrom(...INSTANCES, "seeded"),
    fc.constantFrom("steer", "followup"),
    fc.oneof(
      notJsonText,
      jsonNonObject.map((v) => JSON.stringify(v)),
      fc.record({ body: fc.oneof(fc.constant(""), notAString) }).map((o) => JSON.stringify(o)),
      fc.record({ body: fc.constant("x"), session: fc.oneof(notAString, fc.constantFrom("a b", "x/y")) }).map((o) => JSON.stringify(o)),
      fc.constant(JSON.stringify({ body: "hi" })), // valid, but nothing is in flight → 409
    ),
  )
  .map(([inst, route, body]) => ({ method: "POST", path: `/agents/assistant/${inst}/${route}`, body, headers: {}, instance: inst }));

const badStreamCase: fc.Arbitrary<Case> = fc
  .tuple(
    fc.oneof(
      fc.string({ minLength: 1 }).filter((s) => !/^[0-9A-HJKMNP-TV-Z]{26}$/.test(s) && !/[\r\n]/.test(s) && /^[\x20-\x7e]*$/.test(s) && s.trim() === s),
      fc.constantFrom("0", "-1", "01ARZ3NDEKTSV4RRFFQ69G5FA", "01ARZ3NDEKTSV4RRFFQ69G5FAVV", "01arz3ndektsv4rrffq69g5fav", "01ARZ3NDEKTSV4RRFFQ69G5FAU"),
    ),
    fc.boolean(),
  )
  .map(([id, inHeader]) => ({
    method: "GET",
    path: inHeader ? "/agents/assistant/seeded" : `/agents/assistant/seeded?lastEventId=${encodeURIComponent(id)}`,
    headers: (inHeader ? { "Last-Event-ID": id } : {}) as Record<string, string>,
  }));

/** The seeded dispatch id reused for another target (another instance or session), any valid body. */
const reusedDispatchCase: fc.Arbitrary<Case> = fc
  .tuple(
    instance,
    fc.oneof(fc.constant(undefined), fc.constantFrom("default", "s2")),
    fc.oneof(fc.constant("what time is it?"), fc.string({ minLength: 1, maxLength: 20 })),
    fc.boolean(),
  )
  .map(([inst, session, body, wait]) => ({
    method: "POST",
    path: `/agents/assistant/${inst}${wait ? "?wait=true" : ""}`,
    body: JSON.stringify({ kind: "user", body, dispatchId: SEEDED_DISPATCH, ...(session ? { session } : {}) }),
    headers: {},
    instance: inst,
  }));

const streamNoConversation: fc.Arbitrary<Case> = instance.map((inst) => ({ method: "GET", path: `/agents/assistant/${inst}`, headers: {}, instance: inst }));

const anyCase = fc.oneof(
  { arbitrary: dispatchCase, weight: 6 },
  { arbitrary: reusedDispatchCase, weight: 2 },
  { arbitrary: badPathCase, weight: 2 },
  { arbitrary: unknownAgentCase, weight: 1 },
  { arbitrary: injectCase, weight: 2 },
  { arbitrary: badStreamCase, weight: 2 },
  { arbitrary: streamNoConversation, weight: 1 },
);

describe("malformed requests", () => {
  it("each gets a 4xx JSON {error} and leaves the store unchanged", async () => {
    const before = await snapshot(store);
    expect(before).toContain(lastRecordId);
    await fc.assert(
      fc.asyncProperty(anyCase, async (req) => {
        const res = await app.request(req.path, { method: req.method, body: req.body, headers: req.headers });
        expect(res.status, `${req.method} ${req.path} ${req.body?.slice(0, 200)}`).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
        expect(res.headers.get("content-type")).toMatch(/^application\/json/);
        const body = (await res.json()) as { error?: unknown; code?: unknown };
        expect(typeof body.error).toBe("string");
        expect(typeof body.code).toBe("string");
        expect(await snapshot(store)).toBe(before);
        for (const inst of INSTANCES) {
          for (const session of ["default", "s2"]) {
            await expect(runtime.conversation({ agent: "assistant", instance: inst, session })).rejects.toMatchObject({
              code: "conversation_not_found",
            });
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it("a well-formed request of the same shapes is accepted (the generators are not trivially failing)", async () => {
    const res = await app.request("/agents/assistant/ok-1", { method: "POST", body: JSON.stringify(goodUser) });
    expect(res.status).toBe(202);
  });
});
