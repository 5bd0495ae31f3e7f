/**
 * A transient store failure (contention, throttling, a timeout, a 5xx, a dropped connection)
 * answers 503 with `Retry-After` and `{error, code: "store_unavailable"}`, never a 500 (issue 23 §4).
 */
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { QueueUnavailable, StoreFailure } from "../../../src/errors.ts";
import { DynamoStoreContended } from "../../../src/dynamodb/errors.ts";
import { toErrorResponse } from "../../../src/http/http-errors.ts";

function named(name: string, extra: Record<string, unknown> = {}): Error {
  const err = new Error(`${name} happened`);
  err.name = name;
  return Object.assign(err, extra);
}

async function answer(err: unknown): Promise<Response> {
  const app = new Hono();
  const logged: unknown[] = [];
  app.post("/x", () => {
    throw err;
  });
  app.onError((e, c) => toErrorResponse(c, e, (_m, e2) => void logged.push(e2)));
  return app.request("/x", { method: "POST" });
}

describe("transient store failures answer 503 store_unavailable with Retry-After", () => {
  it.for([
    ["optimistic retries exhausted (DynamoDB)", new DynamoStoreContended("admitSubmission", 8)],
    ["DynamoDB throttling", named("ThrottlingException", { $retryable: { throttling: true } })],
    ["provisioned throughput exceeded", named("ProvisionedThroughputExceededException")],
    ["a request timeout", named("TimeoutError")],
    ["a 5xx answer", named("InternalServerError", { $metadata: { httpStatusCode: 500 } })],
    ["a dropped connection", named("Error", { code: "ECONNRESET" })],
    ["a locked SQLite file", named("SqliteStoreBusy")],
    ["a store failure wrapping a throttle", new StoreFailure(named("ThrottlingException"))],
  ] as const)("%s", async ([, err]) => {
    const res = await answer(err);
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    const body = (await res.json()) as { error: string; code: string };
    expect(body.code).toBe("store_unavailable");
    expect(body.error).toMatch(/nothing was stored/);
  });

  it("a queue that could not be reached is 503 queue_unavailable: the submission is stored, so a retry of the dispatch id is the remedy", async () => {
    const res = await answer(new QueueUnavailable("sub-1", named("Error", { code: "ECONNREFUSED" })));
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    const body = (await res.json()) as { error: string; code: string };
    expect(body.code).toBe("queue_unavailable");
    expect(body.error).toMatch(/sub-1 is stored/);
    expect(body.error).toMatch(/same dispatchId/);
  });

  it("anything else is still a 500 with a generic message", async () => {
    const res = await answer(new TypeError("a bug"));
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: "internal server error", code: "internal" });
  });
});
