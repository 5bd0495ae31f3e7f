import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { describe, expect, it } from "vitest";
import { spanClock } from "../../../src/otel/span-clock.ts";

const nanos = ([s, ns]: [number, number]) => BigInt(s) * 1_000_000_000n + BigInt(ns);

describe("spanClock", () => {
  it("is an HrTime on the epoch that never goes back", () => {
    let last = spanClock();
    expect(Math.abs(last[0] * 1_000 - Date.now())).toBeLessThan(2_000);
    for (let i = 0; i < 10_000; i++) {
      const now = spanClock();
      expect(now[1]).toBeGreaterThanOrEqual(0);
      expect(now[1]).toBeLessThan(1_000_000_000);
      expect(nanos(now) >= nanos(last)).toBe(true);
      last = now;
    }
  });

  it("orders spans one right after another as they happened, in the SDK's own span times", () => {
    const exporter = new InMemorySpanExporter();
    const tracer = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] }).getTracer("test");
    let overlaps = 0;
    for (let i = 0; i < 2_000; i++) {
      const first = tracer.startSpan("first", { startTime: spanClock() });
      first.end(spanClock());
      const second = tracer.startSpan("second", { startTime: spanClock() });
      second.end(spanClock());
      const [a, b] = exporter.getFinishedSpans().slice(-2);
      if (nanos(a!.endTime) > nanos(b!.startTime)) overlaps++;
    }
    expect(overlaps).toBe(0);
  });
});
