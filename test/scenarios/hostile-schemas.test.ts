/**
 * Issue 24's findings on result schemas, through a real server: a schema nested thousands deep
 * is a 400 (it was a 500), one over the size limit is a 400 naming it, a super-linear pattern on
 * the reply settles at once (it blocked the event loop for seconds and expired leases), and
 * `/healthz` keeps answering while schemas that take seconds to compile arrive (they compile on
 * the result-schema thread).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serve, type ServerHandle } from "../../src/server/server.ts";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import { scriptedModel } from "../../src/agent/scripted-model.ts";
import { MAX_RESULT_SCHEMA_BYTES } from "../../src/protocol/limits.ts";
import { createMemoryStore } from "../../src/memory/index.ts";

let runtime: Runtime;
let server: ServerHandle;

beforeAll(async () => {
  runtime = createRuntime({
    agents: {
      // Replies with a name of 40 `a`s and a `!`: `^(a+)+$` backtracks 2^40 times on it in V8.
      namer: {
        initialize: () => ({
          ...scriptedModel(Array.from({ length: 10 }, () => [{ text: JSON.stringify({ name: `${"a".repeat(40)}!` }) }])),
          systemPrompt: "Name things.",
        }),
      },
    },
    store: createMemoryStore(),
    flushPolicy: { bytes: 0, intervalMs: 0 },
    onObserverError: () => {},
  });
  await runtime.start();
  server = await serve(runtime, { port: 0, hostname: "127.0.0.1", log: () => {} });
});
afterAll(async () => {
  await server?.close();
  await runtime?.close();
});

/** `resultSchema` as a value, or as JSON text (one too deep for this process's JSON.stringify). */
function dispatch(instance: string, resultSchema: unknown, wait = false): Promise<Response> {
  const schemaJson = typeof resultSchema === "string" ? resultSchema : JSON.stringify(resultSchema);
  return fetch(`${server.url}/agents/namer/${instance}${wait ? "?wait=true" : ""}`, {
    method: "POST",
    body: `{"kind":"user","body":"name it","resultRetries":0,"resultSchema":${schemaJson}}`,
  });
}

describe("hostile result schemas (embedded server)", () => {
  it("a schema nested 5,000 deep is a 400 naming the depth limit, not a 500", async () => {
    const schema = `${'{"type":"array","items":'.repeat(5_000)}{"type":"string"}${"}".repeat(5_000)}`;
    const res = await dispatch("deep", schema);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ code: "invalid_dispatch", error: "resultSchema nests deeper than 32 levels" });
  });

  it("a schema over 64 KiB is a 400 naming the size limit", async () => {
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 2_000; i++) properties[`field${i}`] = { type: "string", pattern: "^[a-z]+$", format: "email" };
    const res = await dispatch("big", { type: "object", properties });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ code: "invalid_dispatch", error: `resultSchema exceeds ${MAX_RESULT_SCHEMA_BYTES} bytes as JSON` });
  });

  it("a lookahead pattern is refused at admission; `^(a+)+$` on the reply settles at once as result_schema_invalid", async () => {
    const look = await dispatch("look", { type: "string", pattern: "^(?!x)" });
    expect(look.status).toBe(400);
    expect(((await look.json()) as { error: string }).error).toMatch(/^invalid resultSchema: pattern "\^\(\?!x\)" is not supported/);

    const res = await dispatch("redos", { type: "object", properties: { name: { type: "string", pattern: "^(a+)+$" } } }, true);
    expect(res.status).toBe(200);
    const outcome = (await res.json()) as { status: string; errorCode?: string; error?: string };
    expect(outcome).toMatchObject({ status: "failed", errorCode: "result_schema_invalid" });
    expect(outcome.error).toContain('must match pattern "^(a+)+$"');
  });

  it("a counted repetition that multiplies past RE2's limit is a 400 naming the limit", async () => {
    const res = await dispatch("repeat", { type: "string", pattern: "(a{1000}){1000}" });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      code: "invalid_dispatch",
      error: "invalid resultSchema: pattern \"(a{1000}){1000}\" is not supported: nested repetitions whose counts multiply past 1000 (RE2's limit), at `{1000}`",
    });
  });

  it("/healthz keeps answering while schemas that take seconds to compile arrive", async () => {
    // ajv's code generation is quadratic in an `anyOf`'s length: each of these takes ~1 s to compile.
    const slow = (salt: string) => ({ anyOf: Array.from({ length: 300 }, (_, i) => ({ const: `${salt}-${i}` })) });
    let firstHostileAnswered = false;
    const hostile = ["h1", "h2", "h3"].map((salt) => dispatch(`slow-${salt}`, slow(salt)).finally(() => (firstHostileAnswered = true)));
    let answeredBeforeFirstHostile = 0;
    while (!firstHostileAnswered) {
      const res = await fetch(`${server.url}/healthz`);
      expect(await res.text()).toBe("ok");
      if (!firstHostileAnswered) answeredBeforeFirstHostile++;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const answers = await Promise.all(hostile);
    expect(answers.map((r) => r.status)).toEqual([202, 202, 202]);
    // On the event loop, the first compile would hold every /healthz until it ends (at most the
    // one sent before it started could answer); here several answered while it ran. The bench
    // measures the latencies (bench/hostile-schemas.ts).
    expect(answeredBeforeFirstHostile).toBeGreaterThanOrEqual(3);
  });
});
