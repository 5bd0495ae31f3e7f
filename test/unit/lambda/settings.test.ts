/** The handlers' settings from the environment: defaults, tuning knobs, and refusals that name the variable. */
import { describe, expect, it } from "vitest";
import { parseChatPage, readSettings, subagentLimitsFromEnv } from "../../../src/lambda/settings.ts";
import { createRuntime } from "../../../src/runtime/runtime.ts";
import { namesOnlyAgents } from "../../../src/agent/names-only-agents.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { RUNTIME_DEFAULTS, STREAM_MAX_MS, STREAM_POLL } from "../../../src/runtime/defaults.ts";

const base = { TABLE_NAME: "t", BUCKET_NAME: "b", QUEUE_URL: "https://sqs.local/q.fifo" };

describe("readSettings", () => {
  it("defaults the delta flush to the spec's 1 KB / 200 ms and takes the knobs when set", () => {
    expect(readSettings(base).flushPolicy).toEqual({ bytes: 1024, intervalMs: 200 });
    expect(readSettings({ ...base, HARNESS_FLUSH_INTERVAL_MS: "1000", HARNESS_FLUSH_BYTES: "4096" }).flushPolicy).toEqual({
      bytes: 4096,
      intervalMs: 1000,
    });
  });

  it("falls back to the runtime's defaults, and to the serverless stream maximum", () => {
    const settings = readSettings(base);
    expect(settings.leaseMs).toBe(RUNTIME_DEFAULTS.leaseMs);
    expect(settings.flushPolicy).toEqual(RUNTIME_DEFAULTS.flushPolicy);
    expect(settings.streamMaxMs).toBe(STREAM_MAX_MS.serverless);
    expect(settings.streamPoll).toEqual(STREAM_POLL.serverless);
  });

  it("takes the stream poll knobs, and refuses a malformed one", () => {
    expect(readSettings({ ...base, HARNESS_STREAM_POLL_MS: "50", HARNESS_STREAM_MAX_POLL_MS: "2000" }).streamPoll).toEqual({ pollMs: 50, maxPollMs: 2000 });
    expect(() => readSettings({ ...base, HARNESS_STREAM_POLL_MS: "0" })).toThrow(/HARNESS_STREAM_POLL_MS/);
  });

  it("reads the delta retention (lean history), 1 h by default", () => {
    expect(readSettings(base).deltaRetentionMs).toBe(3_600_000);
    expect(readSettings({ ...base, HARNESS_DELTA_RETENTION_MS: "7200000" }).deltaRetentionMs).toBe(7_200_000);
    expect(() => readSettings({ ...base, HARNESS_DELTA_RETENTION_MS: "an hour" })).toThrow(/HARNESS_DELTA_RETENTION_MS/);
    expect(readSettings(base).conversationRetentionMs, "conversations kept by default").toBeUndefined();
    expect(readSettings({ ...base, HARNESS_CONVERSATION_RETENTION_MS: "7776000000" }).conversationRetentionMs).toBe(7_776_000_000);
    expect(() => readSettings({ ...base, HARNESS_CONVERSATION_RETENTION_MS: "90 days" })).toThrow(/HARNESS_CONVERSATION_RETENTION_MS/);
  });

  it("reads the CORS origins of the app, none by default", () => {
    expect(readSettings(base).corsOrigins).toEqual([]);
    expect(readSettings({ ...base, HARNESS_CORS_ORIGINS: "https://app.example.com,http://localhost:5173" }).corsOrigins).toEqual([
      "https://app.example.com",
      "http://localhost:5173",
    ]);
    expect(() => readSettings({ ...base, HARNESS_CORS_ORIGINS: "app.example.com" })).toThrow(/HARNESS_CORS_ORIGINS/);
  });

  it("refuses a malformed knob or a missing name, naming the variable", () => {
    expect(() => readSettings({ ...base, HARNESS_FLUSH_INTERVAL_MS: "soon" })).toThrow(/HARNESS_FLUSH_INTERVAL_MS/);
    expect(() => readSettings({ ...base, HARNESS_LEASE_MS: "-5" })).toThrow(/HARNESS_LEASE_MS/);
    expect(() => readSettings({ TABLE_NAME: "t", BUCKET_NAME: "b" })).toThrow(/QUEUE_URL/);
  });
});

describe("subagentLimitsFromEnv (the functions that know the agents by name only)", () => {
  it("reads the agents module's limits from HARNESS_SUBAGENT_LIMITS; unset: none (the defaults)", () => {
    expect(subagentLimitsFromEnv({})).toBeUndefined();
    expect(subagentLimitsFromEnv({ HARNESS_SUBAGENT_LIMITS: '{"onParentTerminal":"leave_running"}' })).toEqual({ onParentTerminal: "leave_running" });
  });

  it("refuses anything but a JSON object, naming the variable; createRuntime checks the fields", () => {
    for (const raw of ["leave_running", "[1]", "null", "{"]) {
      expect(() => subagentLimitsFromEnv({ HARNESS_SUBAGENT_LIMITS: raw }), raw).toThrow(/HARNESS_SUBAGENT_LIMITS must be a JSON object/);
    }
    const limits = subagentLimitsFromEnv({ HARNESS_SUBAGENT_LIMITS: '{"onParentTerminal":"sometimes"}' });
    expect(() => createRuntime({ agents: namesOnlyAgents(["lead"]), store: createMemoryStore(), subagentLimits: limits })).toThrow(
      /subagentLimits.onParentTerminal must be "cancel_children" or "leave_running"/,
    );
  });
});

describe("parseChatPage (HARNESS_CHAT_PAGE, the construct's chatPage)", () => {
  it("unset or empty: no page; {} the defaults; the options as given", () => {
    expect(parseChatPage(undefined)).toBeUndefined();
    expect(parseChatPage(" ")).toBeUndefined();
    expect(parseChatPage("{}")).toEqual({});
    const options = { title: "Acme", placeholder: "Ask", signIn: { url: "https://auth.example.com/authorize" }, instanceClaim: "tenant" };
    expect(parseChatPage(JSON.stringify(options))).toEqual(options);
  });

  it("refuses what is not the page's options, naming the variable", () => {
    for (const raw of ["true", "[]", "{", '{"colour":"red"}', '{"signIn":"https://x"}', '{"title":""}', '{"instanceClaim":7}']) {
      expect(() => parseChatPage(raw), raw).toThrow(/HARNESS_CHAT_PAGE/);
    }
  });
});
