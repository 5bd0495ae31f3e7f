/**
 * OpenTelemetry on Lambda (the construct's `tracing.openTelemetry`): the hooks the injected module
 * installs give the runtime the GenAI spans on the setup module's provider, and an invocation
 * flushes a batching exporter before it returns (Lambda freezes the process after the handler
 * returns). A failed flush is reported, never thrown into the invocation.
 */
import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics } from "@aws-lambda-powertools/metrics";
import { BatchSpanProcessor, InMemorySpanExporter, TracerProvider } from "@opentelemetry/sdk-trace";
import type { Context } from "aws-lambda";
import { afterEach, describe, expect, it } from "vitest";
import { clockTool } from "../../../src/agent/clock-tool.ts";
import { localModel } from "../../../src/agent/local-model.ts";
import { otelTracingHooks } from "../../../src/lambda/otel-hooks.ts";
import { invocation } from "../../../src/lambda/wiring.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";

const context = { functionName: "worker", awsRequestId: "req-1" } as unknown as Context;
const logger = new Logger({ serviceName: "otel-hooks-test", logLevel: "ERROR" });
const metrics = new Metrics({ namespace: "test", serviceName: "otel-hooks-test" });

let runtime: Runtime | undefined;
afterEach(async () => {
  await runtime?.close();
  runtime = undefined;
});

/** A batching provider that would export only after an hour unless flushed. */
function batchingProvider() {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: 3_600_000 })],
  });
  return { exporter, tracerProvider };
}

describe("otelTracingHooks", () => {
  it("a keyless run inside an invocation: its GenAI spans are exported before the invocation returns", async () => {
    const { exporter, tracerProvider } = batchingProvider();
    const hooks = otelTracingHooks({ tracerProvider, attributes: { "deployment.environment.name": "test" } });
    runtime = createRuntime({
      store: createMemoryStore(),
      agents: { assistant: { initialize: () => ({ ...localModel(), tools: [clockTool()] }) } },
      observers: [...hooks.observers!],
      interceptors: [...hooks.interceptors!],
    });
    await runtime.start();
    const rt = runtime;

    const outcome = await invocation({ logger, metrics, tracing: [hooks] }, context, async () => {
      const { submissionId } = await rt.dispatch({ agent: "assistant", instance: "otel-lambda", message: { kind: "user", body: "what time is it?" } });
      const settled = await rt.wait(submissionId);
      // Ended, but still in the batch: nothing is exported while the invocation runs.
      expect(exporter.getFinishedSpans()).toEqual([]);
      return settled;
    });

    expect(outcome).toMatchObject({ status: "succeeded" });
    const names = exporter.getFinishedSpans().map((s) => s.name).sort();
    expect(names).toEqual(["chat local-echo", "chat local-echo", "execute_tool clock", "invoke_agent assistant"]);
    const invoke = exporter.getFinishedSpans().find((s) => s.name.startsWith("invoke_agent"))!;
    expect(invoke.attributes).toMatchObject({ "gen_ai.operation.name": "invoke_agent", "deployment.environment.name": "test" });
    await tracerProvider.shutdown();
  });

  it("flushes when the work throws too, and a failed flush is reported without failing the invocation", async () => {
    const { exporter, tracerProvider } = batchingProvider();
    const tracer = tracerProvider.getTracer("test");
    const hooks = otelTracingHooks({ tracerProvider });
    await expect(
      invocation({ logger, metrics, tracing: [hooks] }, context, async () => {
        tracer.startSpan("work").end();
        throw new Error("the handler failed");
      }),
    ).rejects.toThrow("the handler failed");
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(["work"]);

    const reported: unknown[] = [];
    const failing = { getTracer: tracerProvider.getTracer.bind(tracerProvider), forceFlush: () => Promise.reject(new Error("collector unreachable")) };
    const failingHooks = otelTracingHooks({ tracerProvider: failing }, (err) => reported.push(err));
    await expect(invocation({ logger, metrics, tracing: [failingHooks] }, context, async () => "done")).resolves.toBe("done");
    expect(reported).toEqual([new Error("collector unreachable")]);
    await tracerProvider.shutdown();
  });
});
