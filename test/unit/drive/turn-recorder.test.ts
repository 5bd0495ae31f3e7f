import { describe, expect, it, vi } from "vitest";
import type { AgentEvent } from "@earendil-works/pi-agent-core";
import type { AssistantMessage } from "@earendil-works/pi-ai";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { ClaimLost, StoreFailure } from "../../../src/errors.ts";
import type { LogWriter } from "../../../src/ports/log-writer.ts";
import type { HarnessEvent } from "../../../src/ports/observer.ts";
import { emptyAssistantMessage, keylessModel } from "../../../src/agent/block-stream.ts";
import type { DriveOutcome } from "../../../src/drive/drive-outcome.ts";
import { TurnRecorder } from "../../../src/drive/turn-recorder.ts";
import { Harness, summary } from "../../support/drive-kit.ts";

const model = keylessModel("m-1", "test");
const assistant = (over: Partial<AssistantMessage> = {}): AssistantMessage => ({ ...emptyAssistantMessage(model, 0, "stop"), ...over });
const delta = (text: string) =>
  ({ type: "message_update", message: assistant(), assistantMessageEvent: { type: "text_delta", delta: text, contentIndex: 0 } }) as AgentEvent;

/** A recorder over a claimed submission's real log writer (memory store). */
async function setup(
  options: {
    log?: (log: LogWriter) => LogWriter;
    halt?: DriveOutcome;
    halted?: () => DriveOutcome | undefined;
    onStoreError?: (err: unknown) => void;
    flushPolicy?: { bytes: number; intervalMs: number };
    faults?: boolean;
  } = {},
) {
  const h = new Harness();
  await h.admit({ kind: "user", body: "hi" });
  await h.claim();
  const writer = h.writer();
  await writer.read();
  const records: ConversationRecord[] = [];
  const events: HarnessEvent[] = [];
  const phases: string[] = [];
  const storeErrors: unknown[] = [];
  const recorder = new TurnRecorder(
    {
      log: options.log ? options.log(writer) : writer,
      clock: h.clock,
      flushPolicy: options.flushPolicy ?? { bytes: 1024, intervalMs: 200 },
      observe: (e) => events.push(e),
      modelId: "m-1",
      faults: options.faults === false ? undefined : (phase) => void phases.push(phase),
      records,
      halted: options.halted ?? (() => options.halt),
      onStoreError: options.onStoreError ?? ((err) => storeErrors.push(err)),
    },
    3,
  );
  return { h, recorder, records, events, phases, storeErrors };
}

describe("TurnRecorder: pi agent events into the log through the attempt's writer", () => {
  it("numbers turns after the rebuild's count and correlates a turn's events by a fresh turn id", async () => {
    const { recorder, events } = await setup();
    expect(recorder.correlation().turnId).toBeUndefined();
    await recorder.onEvent({ type: "turn_start" } as AgentEvent);
    const started = events[0] as Extract<HarnessEvent, { type: "turn_started" }>;
    expect(started.turn).toBe(4);
    expect(started.correlation.turnId).toBeTruthy();
    expect(recorder.correlation().turnId).toBe(started.correlation.turnId);
    expect(recorder.correlation(false).turnId).toBeUndefined();
    await recorder.onEvent({ type: "turn_start" } as AgentEvent);
    expect((events[1] as typeof started).turn).toBe(5);
    expect((events[1] as typeof started).correlation.turnId).not.toBe(started.correlation.turnId);
  });

  it("batches deltas (nothing awaited on the hot path) and flushes them before the message's end, stamped with the turn", async () => {
    const { h, recorder, records, phases } = await setup({ faults: false });
    await recorder.onEvent({ type: "turn_start" } as AgentEvent);
    await recorder.onEvent({ type: "message_start", message: assistant() } as AgentEvent);
    expect(recorder.onEvent(delta("Hel"))).toBeUndefined();
    expect(recorder.onEvent(delta("lo"))).toBeUndefined();
    expect(recorder.onEvent(delta("!"))).toBeUndefined();
    await recorder.onEvent({ type: "message_end", message: assistant({ content: [{ type: "text", text: "Hello!" }] }) } as AgentEvent);
    // The first fragment went at once (ADR 0036); the others waited for the message's end.
    expect(records.map(summary)).toEqual([
      "assistant_message_started",
      "assistant_text_delta: Hel",
      "assistant_text_delta: lo!",
      "assistant_message_completed: stop",
    ]);
    expect(new Set(records.map((r) => r.turnId)).size).toBe(1);
    expect(records[0]!.turnId).toBe(recorder.correlation().turnId);
    expect(recorder.lastAssistant?.content).toEqual([{ type: "text", text: "Hello!" }]);
    // The local log and the store agree.
    expect((await h.records()).map((r) => r.id)).toEqual(records.map((r) => r.id));
    expect(phases).toEqual([]);
  });

  it("writes a message's first text and first thinking fragment at once, before the flush interval (ADR 0036)", async () => {
    const { h, recorder, records } = await setup({ faults: false });
    const thinking = (text: string) =>
      ({ type: "message_update", message: assistant(), assistantMessageEvent: { type: "thinking_delta", delta: text, contentIndex: 0 } }) as AgentEvent;
    await recorder.onEvent({ type: "turn_start" } as AgentEvent);
    for (const round of [1, 2]) {
      await recorder.onEvent({ type: "message_start", message: assistant() } as AgentEvent);
      // No time passes: the 200 ms / 1 KB policy alone would write nothing before the message's end.
      recorder.onEvent(thinking(`hm${round}`));
      recorder.onEvent(thinking("…"));
      await vi.waitFor(() => expect(records.map(summary).at(-1)).toBe(`assistant_thinking_delta: hm${round}`));
      recorder.onEvent(delta(`A${round}`));
      await vi.waitFor(() => expect(records.map(summary).at(-1)).toBe(`assistant_text_delta: A${round}`));
      recorder.onEvent(delta("b"));
      recorder.onEvent(delta("c"));
      await recorder.onEvent({ type: "message_end", message: assistant() } as AgentEvent);
    }
    const second = records.map(summary).slice(records.map(summary).lastIndexOf("assistant_message_started"));
    expect(second).toEqual([
      "assistant_message_started",
      "assistant_thinking_delta: hm2",
      // The kind switch flushed the pending thinking; the text's first fragment went at once.
      "assistant_thinking_delta: …",
      "assistant_text_delta: A2",
      "assistant_text_delta: bc",
      "assistant_message_completed: stop",
    ]);
    expect(h.clock.now(), "the clock never moved").toBe(records[0]!.time ? Date.parse(records[0]!.time) : Number.NaN);
  });

  it("passes the mid_stream fault point once, after the first delta write is durable", async () => {
    const { recorder, records, phases } = await setup();
    await recorder.onEvent({ type: "turn_start" } as AgentEvent);
    const big = "x".repeat(1024);
    await recorder.onEvent(delta(big));
    expect(phases).toEqual(["mid_stream"]);
    expect(records.map((r) => r.kind)).toEqual(["assistant_text_delta"]);
    await recorder.onEvent(delta(big));
    expect(phases).toEqual(["mid_stream"]);
  });

  it("reports a tool's end only once its outcome is durable", async () => {
    const { recorder, events, records } = await setup();
    await recorder.onEvent({ type: "turn_start" } as AgentEvent);
    const pending = recorder.onEvent({ type: "tool_execution_end", toolCallId: "c1", toolName: "t", result: { content: [] }, isError: false } as AgentEvent);
    expect(events.some((e) => e.type === "tool_call_ended")).toBe(false);
    await pending;
    expect(records.map((r) => r.kind)).toEqual(["tool_outcome"]);
    expect(events.at(-1)).toMatchObject({ type: "tool_call_ended", callId: "c1" });
  });

  it("hands a failed append to the drive as a store error; after a non-failure halt nothing is written", async () => {
    const lost = new ClaimLost("taken over");
    const failing = await setup({ log: (log) => ({ ...log, correlation: log.correlation, draft: log.draft.bind(log), append: () => Promise.reject(lost) }) as LogWriter });
    await failing.recorder.onEvent({ type: "message_start", message: assistant() } as AgentEvent);
    expect(failing.storeErrors).toEqual([lost]);

    const halted = await setup({ halt: { kind: "interrupted" } });
    expect(halted.recorder.onEvent({ type: "message_start", message: assistant() } as AgentEvent)).toBeUndefined();
    expect(halted.records).toEqual([]);
  });

  it("a write queued behind one that fails is not made: the failure's halt stops it (review finding)", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let calls = 0;
    let halt: DriveOutcome | undefined;
    const { h, recorder } = await setup({
      flushPolicy: { bytes: 0, intervalMs: 0 },
      log: (log) =>
        ({
          ...log,
          correlation: log.correlation,
          draft: log.draft.bind(log),
          // The first append (the delta) fails transiently once the gate opens; the rest are real.
          append: async (drafts: Parameters<LogWriter["append"]>[0]) => {
            if (calls++ > 0) return log.append(drafts);
            await gate;
            throw new StoreFailure(new Error("throttled"));
          },
        }) as LogWriter,
      halted: () => halt,
      onStoreError: () => (halt = { kind: "transient", error: "throttled" }),
    });
    await recorder.onEvent({ type: "turn_start" } as AgentEvent);
    void recorder.onEvent(delta("a")); // in flight, not awaited
    const ended = recorder.onEvent({ type: "message_end", message: assistant({ content: [{ type: "text", text: "a" }] }) } as AgentEvent);
    release();
    await ended;
    expect(halt?.kind).toBe("transient");
    expect(calls, "the message's end was never appended").toBe(1);
    expect((await h.records()).map(summary).filter((r) => r.startsWith("assistant_"))).toEqual([]);
  });

  describe("deltas without a write barrier (ADR 0022)", () => {
    /** A log writer whose appends wait for `open()`, counting them (each is one store transaction). */
    function gated(log: LogWriter) {
      const appends: string[][] = [];
      let gate: { promise: Promise<void>; open: () => void } | undefined;
      const hold = () => {
        let open!: () => void;
        gate = { promise: new Promise<void>((r) => (open = r)), open };
      };
      const wrapped = {
        ...log,
        correlation: log.correlation,
        draft: log.draft.bind(log),
        append: async (drafts: Parameters<LogWriter["append"]>[0]) => {
          appends.push(drafts.map((d) => (d.kind === "assistant_text_delta" ? `delta:${(d.payload as { text: string }).text}` : d.kind)));
          await gate?.promise;
          return log.append(drafts);
        },
      } as LogWriter;
      return { wrapped, appends, hold, open: () => gate?.open() };
    }
    const everyDelta = { bytes: 0, intervalMs: 0 };

    it("a delta is written at once but not awaited; deltas arriving while it is in flight share the next append", async () => {
      let g!: ReturnType<typeof gated>;
      const { h, recorder, records } = await setup({ flushPolicy: everyDelta, faults: false, log: (log) => (g = gated(log)).wrapped });
      await recorder.onEvent({ type: "turn_start" } as AgentEvent);
      await recorder.onEvent({ type: "message_start", message: assistant() } as AgentEvent);
      g.hold();
      expect(recorder.onEvent(delta("a")), "no barrier on a delta").toBeUndefined();
      expect(recorder.onEvent(delta("b"))).toBeUndefined();
      expect(recorder.onEvent(delta("c"))).toBeUndefined();
      await new Promise((r) => setImmediate(r));
      // One write in flight (the first delta); the other two wait for it.
      expect(g.appends.slice(1)).toEqual([["delta:a"]]);
      g.open();
      await vi.waitFor(() => expect(records.map(summary)).toEqual(["assistant_message_started", "assistant_text_delta: a", "assistant_text_delta: b", "assistant_text_delta: c"]));
      expect(g.appends.slice(1), "the waiting deltas went in one append").toEqual([["delta:a"], ["delta:b", "delta:c"]]);
      await recorder.onEvent({ type: "message_end", message: assistant({ content: [{ type: "text", text: "abc" }] }) } as AgentEvent);
      expect((await h.records()).map(summary).slice(-5)).toEqual([
        "assistant_message_started",
        "assistant_text_delta: a",
        "assistant_text_delta: b",
        "assistant_text_delta: c",
        "assistant_message_completed: stop",
      ]);
    });

    it("a record that is a barrier takes the waiting deltas with it, in order, and is awaited", async () => {
      let g!: ReturnType<typeof gated>;
      const { h, recorder, records } = await setup({ flushPolicy: everyDelta, faults: false, log: (log) => (g = gated(log)).wrapped });
      await recorder.onEvent({ type: "turn_start" } as AgentEvent);
      g.hold();
      recorder.onEvent(delta("x"));
      recorder.onEvent(delta("y"));
      const ended = recorder.onEvent({ type: "message_end", message: assistant({ content: [{ type: "text", text: "xy" }] }) } as AgentEvent);
      expect(ended, "the message's end is a barrier").toBeInstanceOf(Promise);
      let durable = false;
      void ended!.then(() => (durable = true));
      await new Promise((r) => setImmediate(r));
      expect(durable).toBe(false);
      g.open();
      await ended;
      expect(g.appends).toEqual([["delta:x"], ["delta:y", "assistant_message_completed"]]);
      expect(records.map(summary)).toEqual(["assistant_text_delta: x", "assistant_text_delta: y", "assistant_message_completed: stop"]);
      const ids = (await h.records()).map((r) => r.id);
      expect(ids).toEqual([...ids].sort());
    });

    it("a failed delta write becomes the drive's halt, and the deltas waiting behind it are not written", async () => {
      const lost = new ClaimLost("taken over");
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const appends: number[] = [];
      const storeErrors: unknown[] = [];
      let halt: DriveOutcome | undefined;
      const { recorder } = await setup({
        flushPolicy: everyDelta,
        faults: false,
        halted: () => halt,
        onStoreError: (err) => {
          storeErrors.push(err);
          halt = { kind: "interrupted" }; // what the drive does with a ClaimLost
        },
        log: (log) =>
          ({
            ...log,
            correlation: log.correlation,
            draft: log.draft.bind(log),
            append: async (drafts: unknown[]) => {
              appends.push(drafts.length);
              await gate;
              throw lost;
            },
          }) as LogWriter,
      });
      expect(recorder.onEvent(delta("1"))).toBeUndefined();
      expect(recorder.onEvent(delta("2"))).toBeUndefined();
      release();
      await vi.waitFor(() => expect(storeErrors).toEqual([lost]));
      await new Promise((r) => setImmediate(r));
      expect(appends, "only the first delta's append was tried").toEqual([1]);
      expect(recorder.onEvent({ type: "message_end", message: assistant() } as AgentEvent), "nothing more is written").toBeUndefined();
      expect(appends).toEqual([1]);
    });
  });
});
