import { describe, expect, it } from "vitest";
import { createAssistantMessageEventStream } from "@earendil-works/pi-ai";
import { ManualClock } from "../../../src/ports/clock.ts";
import type { AgentTool } from "../../../src/agent/agent-setup.ts";
import { keylessModel } from "../../../src/agent/block-stream.ts";
import { Bounds, TOOL_ABORTED } from "../../../src/drive/bounds.ts";

const model = keylessModel("m", "test");
const tool = (execute: AgentTool["execute"]): AgentTool => ({
  name: "t",
  label: "t",
  description: "t",
  parameters: { type: "object", properties: {} },
  execute,
});
const call = (t: AgentTool, id: string, signal?: AbortSignal) => ({ tool: t, id, params: {}, signal, onUpdate: undefined });
const never = () => new Promise<never>(() => {});

describe("bounds: turn and tool timeouts, abort", () => {
  it("ends a model response at the turn timeout with an error, after telling the drive, then stops the model", async () => {
    const clock = new ManualClock();
    const bounds = new Bounds(clock, { turnTimeoutMs: 10_000, toolTimeoutMs: 60_000 });
    const stream = createAssistantMessageEventStream();
    const order: string[] = [];
    bounds.boundTurn(stream, model, { onTimeout: (e) => order.push(`timeout: ${e}`), stopModel: () => order.push("stop") });
    await clock.advance(9_000);
    expect(order).toEqual([]);
    await clock.advance(1_500); // the watchdog wakes every 500 ms (a twentieth of the shortest bound)
    expect(order).toEqual(["timeout: model turn timed out after 10s", "stop"]);
    expect(await stream.result()).toMatchObject({ stopReason: "error", errorMessage: "model turn timed out after 10s" });
    bounds.dispose();
  });

  it("a response that ends in time clears its bound", async () => {
    const clock = new ManualClock();
    const bounds = new Bounds(clock, { turnTimeoutMs: 1_000, toolTimeoutMs: 1_000 });
    const stream = createAssistantMessageEventStream();
    let timedOut = false;
    bounds.boundTurn(stream, model, { onTimeout: () => (timedOut = true), stopModel: () => {} });
    stream.end({ role: "assistant", content: [], api: model.api, provider: model.provider, model: "m", usage: {} as never, stopReason: "stop", timestamp: 0 });
    await stream.result();
    await clock.advance(5_000);
    expect(timedOut).toBe(false);
    bounds.dispose();
  });

  it("a tool past its timeout becomes an error result the model sees, and its signal is aborted", async () => {
    const clock = new ManualClock();
    const bounds = new Bounds(clock, { turnTimeoutMs: 60_000, toolTimeoutMs: 2_000 });
    let seen: AbortSignal | undefined;
    const result = bounds.runTool(call(tool((_id, _p, signal) => ((seen = signal), never())), "c1"));
    await clock.advance(2_200);
    expect(await result).toEqual({ content: [{ type: "text", text: "tool t timed out after 2s" }], details: {}, isError: true });
    expect(seen?.aborted).toBe(true);
    bounds.dispose();
  });

  it("abort() ends the response in flight and releases tools that ignore their signal", async () => {
    const clock = new ManualClock();
    const bounds = new Bounds(clock, { turnTimeoutMs: 60_000, toolTimeoutMs: 60_000 });
    const stream = createAssistantMessageEventStream();
    bounds.boundTurn(stream, model, { onTimeout: () => {}, stopModel: () => {} });
    const running = bounds.runTool(call(tool(() => never()), "c1"));
    bounds.abort();
    await expect(running).rejects.toThrow(TOOL_ABORTED);
    expect(await stream.result()).toMatchObject({ stopReason: "aborted", errorMessage: "Request was aborted" });
    // A tool started after pi's own abort never runs.
    const aborted = AbortSignal.abort();
    await expect(bounds.runTool(call(tool(() => never()), "c2", aborted))).rejects.toThrow(TOOL_ABORTED);
    bounds.dispose();
  });

  it("a tool's own result or error passes through", async () => {
    const bounds = new Bounds(new ManualClock(), { turnTimeoutMs: 1_000, toolTimeoutMs: 1_000 });
    const ok = { content: [{ type: "text" as const, text: "ok" }], details: {} };
    expect(await bounds.runTool(call(tool(async () => ok), "c1"))).toBe(ok);
    await expect(bounds.runTool(call(tool(() => { throw new Error("boom"); }), "c2"))).rejects.toThrow("boom");
    bounds.dispose();
  });
});
