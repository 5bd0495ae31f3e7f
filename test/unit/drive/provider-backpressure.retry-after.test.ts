/** How long a provider asks to wait, and which failed turns are backpressure rather than errors. */
import type { AssistantMessage } from "@earendil-works/pi-ai";
import { describe, expect, it } from "vitest";
import { emptyAssistantMessage } from "../../../src/agent/block-stream.ts";
import { backpressureDelayMs, backpressureOf, credentialRefusalOf, retryAfterMsOf } from "../../../src/drive/provider-backpressure.ts";

const now = Date.parse("2026-12-01T08:00:00Z");

describe("retryAfterMsOf", () => {
  it("prefers retry-after-ms, then Retry-After in seconds or as an HTTP date", () => {
    expect(retryAfterMsOf(new Headers({ "retry-after-ms": "1500", "retry-after": "9" }), now)).toBe(1500);
    expect(retryAfterMsOf(new Headers({ "retry-after": "40" }), now)).toBe(40_000);
    expect(retryAfterMsOf(new Headers({ "retry-after": "0.5" }), now)).toBe(500);
    expect(retryAfterMsOf(new Headers({ "retry-after": "Tue, 01 Dec 2026 08:00:30 GMT" }), now)).toBe(30_000);
    expect(retryAfterMsOf(new Headers({ "retry-after": "Tue, 01 Dec 2026 07:00:00 GMT" }), now)).toBe(0);
    expect(retryAfterMsOf(new Headers({ "retry-after": "soon" }), now)).toBeUndefined();
    expect(retryAfterMsOf(new Headers(), now)).toBeUndefined();
  });

  it("falls back to the reset of an exhausted rate limit (OpenAI durations, Anthropic times), the latest one", () => {
    const openai = new Headers({
      "x-ratelimit-remaining-requests": "0",
      "x-ratelimit-reset-requests": "1m2.5s",
      "x-ratelimit-remaining-tokens": "120",
      "x-ratelimit-reset-tokens": "6m0s",
    });
    expect(retryAfterMsOf(openai, now)).toBe(62_500);
    const anthropic = new Headers({
      "anthropic-ratelimit-tokens-remaining": "0",
      "anthropic-ratelimit-tokens-reset": "2026-12-01T08:00:12Z",
      "anthropic-ratelimit-requests-remaining": "0",
      "anthropic-ratelimit-requests-reset": "2026-12-01T08:00:03Z",
    });
    expect(retryAfterMsOf(anthropic, now)).toBe(12_000);
  });
});

describe("backpressureOf", () => {
  const failed = (errorMessage: string): AssistantMessage => ({
    ...emptyAssistantMessage({ api: "x", provider: "x", id: "m" } as never, now, "error"),
    errorMessage,
  });

  it("reads the observed exchange: 429, 503 and 529 are backpressure, a refused connection too, other statuses not", () => {
    expect(backpressureOf(failed("429 rate"), { status: 429, retryAfterMs: 1000 })).toEqual({ reason: "rate_limited", status: 429, error: "429 rate", retryAfterMs: 1000 });
    expect(backpressureOf(failed("503"), { status: 503 })).toMatchObject({ reason: "unavailable", status: 503 });
    expect(backpressureOf(failed("529 overloaded"), { status: 529 })).toMatchObject({ reason: "overloaded", status: 529 });
    // Where and why it could not connect, for the person reading the error (ADR 0053).
    expect(backpressureOf(failed("Connection error."), { unreachable: "ENOTFOUND", host: "api.example.invalid" })).toEqual({
      reason: "unreachable",
      error: "cannot reach api.example.invalid (ENOTFOUND): Connection error.",
    });
    expect(backpressureOf(failed("500 boom"), { status: 500 })).toBeUndefined();
    // The stream started (200) and broke: an error that repeats, whatever the text says.
    expect(backpressureOf(failed("overloaded_error"), { status: 200 })).toBeUndefined();
  });

  it("a 401 or 403 the provider answered is a refused key, failed at once with that reason; not without an exchange (ADR 0053)", () => {
    expect(credentialRefusalOf(failed("401 Incorrect API key provided"), { status: 401 })).toBe(
      "the model provider refused the API key (HTTP 401): check the provider's key variable; 401 Incorrect API key provided",
    );
    expect(credentialRefusalOf(failed("403 forbidden"), { status: 403 })).toMatch(/^the model provider refused access with this API key \(HTTP 403\)/);
    expect(credentialRefusalOf(failed("429"), { status: 429 })).toBeUndefined();
    expect(credentialRefusalOf(failed("401 in the text only"), undefined)).toBeUndefined();
    expect(credentialRefusalOf({ ...failed("x"), stopReason: "aborted" }, { status: 401 })).toBeUndefined();
  });

  it("without an exchange (Bedrock's SDK takes no fetch), reads the error text", () => {
    const bedrock = (text: string): AssistantMessage => ({ ...failed(text), api: "bedrock-converse-stream" });
    expect(backpressureOf(bedrock("Throttling error: Too many requests, please wait before trying again."), undefined)).toMatchObject({ reason: "rate_limited" });
    expect(backpressureOf(bedrock("Service unavailable: try again"), undefined)).toMatchObject({ reason: "unavailable" });
    // Other paths' texts are not guessed at; a message that streamed something is no refusal.
    expect(backpressureOf(failed("503 service unavailable"), undefined)).toBeUndefined();
    expect(backpressureOf({ ...bedrock("Throttling error"), content: [{ type: "text", text: "par" }] }, undefined)).toBeUndefined();
    expect(backpressureOf(failed("connect ECONNREFUSED 127.0.0.1:1"), undefined)).toMatchObject({ reason: "unreachable" });
    expect(backpressureOf(failed("401 authentication_error"), undefined)).toBeUndefined();
    expect(backpressureOf({ ...failed("x"), stopReason: "aborted" }, { status: 429 })).toBeUndefined();
  });

  it("waits what the provider asked (at least a second), else a quarter of the time since admission within [1 s, 60 s]", () => {
    expect(backpressureDelayMs({ reason: "rate_limited", error: "", retryAfterMs: 40_000 }, 0)).toBe(40_000);
    expect(backpressureDelayMs({ reason: "rate_limited", error: "", retryAfterMs: 0 }, 0)).toBe(1_000);
    expect(backpressureDelayMs({ reason: "unreachable", error: "" }, 0)).toBe(1_000);
    expect(backpressureDelayMs({ reason: "unreachable", error: "" }, 20_000)).toBe(5_000);
    expect(backpressureDelayMs({ reason: "unreachable", error: "" }, 3_600_000)).toBe(60_000);
  });
});
