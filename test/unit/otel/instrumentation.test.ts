/**
 * `resolute-harness/otel` with the OpenTelemetry SDK's in-memory exporter: the span tree of a
 * keyless run with a tool call (names, parents, GenAI attributes) and its metrics; a crash and
 * its recovery in a second runtime (a second "process") leave two attempt spans in one trace;
 * a `task` child's spans link to its parent's trace and back.
 */
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { MeterProvider, MetricReader, type HistogramMetricData, type SumMetricData } from "@opentelemetry/sdk-metrics";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from "@opentelemetry/sdk-trace";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AgentDefinition } from "../../../src/agent/agent-definition.ts";
import { otelInstrumentation, submissionSpanContext } from "../../../src/otel/index.ts";
import { ManualClock } from "../../../src/ports/clock.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import type { RuntimeConfig } from "../../../src/runtime/runtime-config.ts";
import { clockTool } from "../../../src/agent/clock-tool.ts";
import { localModel } from "../../../src/agent/local-model.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { scriptedAgent, settleTicks } from "../../support/runtime-kit.ts";

/** Collects on demand (a test reads the meter's state when it wants). */
class OnDemandReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

let exporter: InMemorySpanExporter;
let tracerProvider: TracerProvider;
let reader: OnDemandReader;
let meterProvider: MeterProvider;

beforeEach(() => {
  exporter = new InMemorySpanExporter();
  tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  reader = new OnDemandReader();
  meterProvider = new MeterProvider({ readers: [reader] });
});
afterEach(async () => {
  await tracerProvider.shutdown();
  await meterProvider.shutdown();
});

/** One "process": a runtime with its own instrumentation over the shared SDK. */
function runtimeWith(config: Omit<RuntimeConfig, "observers" | "interceptors">): Runtime {
  const otel = otelInstrumentation({ tracer: tracerProvider.getTracer("test"), meter: meterProvider.getMeter("test") });
  return createRuntime({ flushPolicy: { bytes: 0, intervalMs: 0 }, ...config, observers: [otel.observer], interceptors: [otel.interceptor] });
}

const spans = () => exporter.getFinishedSpans();
const named = (prefix: string) => spans().filter((s) => s.name.startsWith(prefix));
const parentId = (s: ReadableSpan) => s.parentSpanContext?.spanId;
const traceOf = (s: ReadableSpan) => s.spanContext().traceId;

const keyless: Record<string, AgentDefinition> = {
  assistant: { description: "tells the time", initialize: () => ({ ...localModel(), tools: [clockTool()] }) },
};

describe("otelInstrumentation", () => {
  it("a keyless run with a tool call: invoke_agent over two chat spans and an execute_tool span, with GenAI attributes and metrics", async () => {
    const runtime = runtimeWith({ agents: keyless, store: createMemoryStore() });
    await runtime.start();
    const { submissionId, conversationId } = await runtime.dispatch({ agent: "assistant", instance: "otel-1", message: { kind: "user", body: "what time is it?" } });
    expect(await runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    await runtime.close();

    const submission = submissionSpanContext(submissionId);
    const [invoke, ...moreInvokes] = named("invoke_agent");
    expect(moreInvokes).toEqual([]);
    expect(invoke!.name).toBe("invoke_agent assistant");
    expect(invoke!.kind).toBe(SpanKind.INTERNAL);
    // The attempt's parent is the submission's derived span context: the trace is the submission's.
    expect(traceOf(invoke!)).toBe(submission.traceId);
    expect(invoke!.parentSpanContext).toMatchObject({ spanId: submission.spanId, isRemote: true });
    expect(invoke!.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "assistant",
      "gen_ai.conversation.id": conversationId,
      "gen_ai.provider.name": "local",
      "harness.submission.id": submissionId,
      "harness.attempt.count": 1,
      "harness.instance": "otel-1",
      "harness.session": "default",
    });
    expect(invoke!.status.code).toBe(SpanStatusCode.UNSET);

    const chats = named("chat ").sort((a, b) => compareTime(a.startTime, b.startTime));
    expect(chats.map((s) => s.name)).toEqual(["chat local-echo", "chat local-echo"]);
    const [tool, ...moreTools] = named("execute_tool");
    expect(moreTools).toEqual([]);
    expect(tool!.name).toBe("execute_tool clock");
    for (const child of [...chats, tool!]) {
      expect(traceOf(child)).toBe(submission.traceId);
      expect(parentId(child), child.name).toBe(invoke!.spanContext().spanId);
    }
    expect(chats[0]!.kind).toBe(SpanKind.CLIENT);
    expect(chats[0]!.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "local",
      "gen_ai.request.model": "local-echo",
      "gen_ai.response.model": "local-echo",
      "gen_ai.response.finish_reasons": ["tool_call"],
      "gen_ai.usage.input_tokens": expect.any(Number),
      "gen_ai.usage.output_tokens": expect.any(Number),
      "harness.attempt.id": invoke!.attributes["harness.attempt.id"],
    });
    expect(chats[1]!.attributes).toMatchObject({ "gen_ai.response.finish_reasons": ["stop"], "gen_ai.response.time_to_first_chunk": expect.any(Number) });
    expect(tool!.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "clock",
      "gen_ai.tool.call.id": "call_clock_1",
      "gen_ai.tool.type": "function",
    });
    // In time: the first model call, then the tool, then the answer.
    expect(compareTime(chats[0]!.endTime, tool!.startTime)).toBeLessThanOrEqual(0);
    expect(compareTime(tool!.endTime, chats[1]!.startTime)).toBeLessThanOrEqual(0);
    expect(compareTime(invoke!.startTime, chats[0]!.startTime)).toBeLessThanOrEqual(0);
    expect(compareTime(chats[1]!.endTime, invoke!.endTime)).toBeLessThanOrEqual(0);

    const { resourceMetrics } = await reader.collect();
    const metrics = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
    const tokens = metrics.find((m) => m.descriptor.name === "gen_ai.client.token.usage") as HistogramMetricData;
    expect(tokens.descriptor.unit).toBe("{token}");
    const byType = Object.fromEntries(tokens.dataPoints.map((p) => [String(p.attributes["gen_ai.token.type"]), p.value.count]));
    expect(byType).toEqual({ input: 2, output: 2 });
    expect(tokens.dataPoints[0]!.attributes).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.provider.name": "local", "gen_ai.request.model": "local-echo" });
    const settled = metrics.find((m) => m.descriptor.name === "harness.submissions.settled") as SumMetricData;
    expect(settled.dataPoints.map((p) => [p.attributes, p.value])).toEqual([
      [{ "gen_ai.agent.name": "assistant", "harness.submission.status": "succeeded", "harness.error.code": "none" }, 1],
    ]);
  });

  it("a crash mid-reply and its recovery by another runtime: two attempt spans in the submission's one trace", async () => {
    const clock = new ManualClock();
    const store = createMemoryStore({ clock });
    const leaseMs = 30_000;
    const dispatchId = "otel-crash-1";
    let reached!: () => void;
    const atCrash = new Promise<void>((resolve) => (reached = resolve));
    const crashed = runtimeWith({
      agents: keyless,
      store,
      clock,
      leaseMs,
      sweepIntervalMs: 5_000,
      faults: (phase, id) => {
        if (phase !== "mid_stream" || id !== dispatchId) return;
        reached();
        return new Promise<never>(() => {}); // the process "dies" here
      },
    });
    await crashed.start();
    await crashed.dispatch({ agent: "assistant", instance: "otel-crash", dispatchId, message: { kind: "user", body: "what time is it?" } });
    await atCrash;
    await crashed.close({ abandon: true });
    const firstAttempt = (await store.getSubmission(dispatchId)).attemptId!;

    // Another process: its own runtime and instrumentation, the same SDK (the same backend).
    const recovered = runtimeWith({ agents: keyless, store, clock, leaseMs, sweepIntervalMs: 5_000 });
    await recovered.start();
    const waited = recovered.wait(dispatchId);
    await clock.advance(leaseMs + 1_000);
    await clock.advance(5_000);
    await settleTicks();
    await clock.advance(5_000);
    expect(await waited).toMatchObject({ status: "succeeded" });
    await recovered.close();
    const secondAttempt = (await store.getSubmission(dispatchId)).attemptId!;
    expect(secondAttempt).not.toBe(firstAttempt);

    const trace = submissionSpanContext(dispatchId).traceId;
    const attempts = named("invoke_agent").filter((s) => traceOf(s) === trace);
    expect(attempts.map((s) => s.attributes["harness.attempt.id"]).sort()).toEqual([firstAttempt, secondAttempt].sort());
    const lost = attempts.find((s) => s.attributes["harness.attempt.id"] === firstAttempt)!;
    const recovering = attempts.find((s) => s.attributes["harness.attempt.id"] === secondAttempt)!;
    // The dead attempt's own span died with it; the reclaiming process writes its stand-in.
    expect(lost.attributes).toMatchObject({ "harness.attempt.lost": true, "error.type": "attempt_lost" });
    expect(lost.status.code).toBe(SpanStatusCode.ERROR);
    expect(recovering.attributes).toMatchObject({ "harness.attempt.count": 2 });
    expect(recovering.status.code).toBe(SpanStatusCode.UNSET);
    expect(parentId(lost)).toBe(parentId(recovering));
    // The recovered attempt's model calls and tool are its children.
    const children = spans().filter((s) => parentId(s) === recovering.spanContext().spanId).map((s) => s.name);
    expect(children).toContain("chat local-echo");
  });

  it("a task child's spans link to its parent's trace, and the parent's task call links to the child's", async () => {
    const lead = scriptedAgent([
      [{ toolCall: { id: "call-x", name: "task", arguments: { agent: "researcher", prompt: "look it up" } } }],
      [{ text: "done" }],
    ]);
    const researcher = scriptedAgent([[{ text: "found it" }]]);
    researcher.definition.description = "Looks things up";
    const runtime = runtimeWith({
      agents: { lead: lead.definition, researcher: researcher.definition },
      store: createMemoryStore(),
      subagents: { lead: ["researcher"] },
    });
    await runtime.start();
    const { submissionId } = await runtime.dispatch({ agent: "lead", instance: "otel-family", message: { kind: "user", body: "plan" } });
    expect(await runtime.wait(submissionId)).toMatchObject({ status: "succeeded" });
    await runtime.close();

    const parentTrace = submissionSpanContext(submissionId).traceId;
    const parentSpans = named("invoke_agent lead");
    // The parked attempt and the resumed one: both in the parent's trace.
    expect(parentSpans.length).toBe(2);
    for (const s of parentSpans) expect(traceOf(s)).toBe(parentTrace);

    const [child] = named("invoke_agent researcher");
    const childSubmission = String(child!.attributes["harness.submission.id"]);
    expect(traceOf(child!)).toBe(submissionSpanContext(childSubmission).traceId);
    expect(traceOf(child!)).not.toBe(parentTrace);
    expect(child!.links).toEqual([
      expect.objectContaining({
        context: expect.objectContaining({ traceId: parentTrace }),
        attributes: { "harness.link": "parent", "harness.parent.call.id": "call-x" },
      }),
    ]);

    const [taskCall] = named("execute_tool task");
    expect(traceOf(taskCall!)).toBe(parentTrace);
    expect(taskCall!.attributes).toMatchObject({ "gen_ai.tool.call.id": "call-x", "harness.child.submission.id": childSubmission });
    expect(taskCall!.links).toEqual([expect.objectContaining({ context: expect.objectContaining({ traceId: traceOf(child!) }) })]);
  });
});

function compareTime(a: [number, number], b: [number, number]): number {
  return a[0] - b[0] || a[1] - b[1];
}
