import {
  context,
  isSpanContextValid,
  metrics,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Counter,
  type Histogram,
  type Link,
  type Meter,
  type Span,
  type Tracer,
} from "@opentelemetry/api";
import type { Correlation, HarnessEvent, Interceptor, Observer, OpInfo } from "../ports/observer.ts";
import {
  ATTR,
  DURATION_BUCKETS,
  finishReason,
  HARNESS_ATTR,
  METRIC,
  OPERATION,
  providerName,
  TOKEN_BUCKETS,
} from "./genai.ts";
import { spanClock } from "./span-clock.ts";
import { submissionContext, submissionSpanContext } from "./submission-trace.ts";

/** The instrumentation scope name of the spans and metrics. */
export const INSTRUMENTATION_SCOPE = "resolute-harness";

/** Options of {@link otelInstrumentation}. */
export interface OtelInstrumentationOptions {
  /** Default: `trace.getTracer("resolute-harness")` (the global tracer provider the app registered). */
  tracer?: Tracer;
  /** Default: `metrics.getMeter("resolute-harness")`. */
  meter?: Meter;
  /** Added to every span (e.g. `deployment.environment.name`). */
  attributes?: Attributes;
}

/** What {@link otelInstrumentation} returns: register both with the runtime (or the agents module). */
export interface OtelInstrumentation {
  observer: Observer;
  interceptor: Interceptor;
}

/** A span that ends once two things happened (its interceptor returned, and its observer event came). */
interface Pending {
  span: Span;
  startedAt: number;
  returned: boolean;
  /** Set by the event that completes it (`model_response`). */
  completed: boolean;
  firstChunk: boolean;
}

/** One attempt in this process: its `invoke_agent` span and its open children. */
interface AttemptSpans {
  span: Span;
  ctx: Context;
  agent: string;
  turns: Map<string, Pending>;
  /** The turn whose response is streaming (for the time to its first chunk). */
  current?: Pending;
  tools: Map<string, Span>;
}

/**
 * OpenTelemetry spans and metrics for the harness, after the GenAI semantic conventions, using
 * `@opentelemetry/api` only: the app brings the SDK, its exporter and sampler (or none: then
 * every call is a no-op).
 *
 * - One trace per submission: each attempt is an `invoke_agent <agent>` span whose parent is the
 *   submission's derived span context ({@link submissionSpanContext}), so a crashed attempt and
 *   the attempt that recovers it, in another process, share the trace. An attempt whose process
 *   died gets a stand-in span from the process that reclaims its lease (`harness.attempt.lost`).
 * - Inside an attempt: `chat <model>` per model call (request and response model, provider,
 *   tokens, finish reason, time to the first chunk) and `execute_tool <name>` per tool call (tool
 *   name, call id). The spans are active while their work runs, so spans of the app's own (an
 *   HTTP client's, a tool's) nest under them when a context manager is registered.
 * - A `task` child's `invoke_agent` spans link to its parent's trace, and the parent's
 *   `execute_tool task` span links to the child's.
 * - Metrics: `gen_ai.client.token.usage` and `gen_ai.client.operation.duration` per model call,
 *   `harness.submissions.settled` and `harness.recoveries`.
 *
 * Register both halves: the interceptor times the spans, the observer fills in what only events
 * carry. Message contents are never recorded.
 *
 *   const otel = otelInstrumentation();
 *   createRuntime({ ..., observers: [otel.observer], interceptors: [otel.interceptor] });
 */
export function otelInstrumentation(options: OtelInstrumentationOptions = {}): OtelInstrumentation {
  const tracer = options.tracer ?? trace.getTracer(INSTRUMENTATION_SCOPE);
  const meter = options.meter ?? metrics.getMeter(INSTRUMENTATION_SCOPE);
  const common = options.attributes ?? {};
  const tokenUsage: Histogram = meter.createHistogram(METRIC.tokenUsage, {
    unit: "{token}",
    description: "Tokens used per model call",
    advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
  });
  const duration: Histogram = meter.createHistogram(METRIC.operationDuration, {
    unit: "s",
    description: "Duration of model calls",
    advice: { explicitBucketBoundaries: DURATION_BUCKETS },
  });
  const settled: Counter = meter.createCounter(METRIC.settled, { description: "Submissions settled, by status and error code" });
  const recoveries: Counter = meter.createCounter(METRIC.recoveries, { description: "Recoveries, by decision" });

  const attempts = new Map<string, AttemptSpans>();
  /** Attempts whose lost-attempt stand-in was written (a lease is reclaimed once, but stay idempotent). */
  const lost = new Set<string>();

  const endPending = (p: Pending) => {
    if (p.returned && p.completed) p.span.end(spanClock());
  };

  function startAttempt(info: OpInfo): AttemptSpans | undefined {
    const c = info.correlation;
    if (c.submissionId === undefined || c.attemptId === undefined) return undefined;
    const agent = c.sessionKey.agent;
    const links: Link[] = [];
    // The invocation that runs this attempt (a Lambda's span, an HTTP request's), if the app traces it.
    const active = trace.getSpanContext(context.active());
    if (active && isSpanContextValid(active)) links.push({ context: active, attributes: { [HARNESS_ATTR.link]: "invocation" } });
    if (info.parent) {
      links.push({
        context: submissionSpanContext(info.parent.submissionId),
        attributes: { [HARNESS_ATTR.link]: "parent", [HARNESS_ATTR.parentCallId]: info.parent.callId },
      });
    }
    const attributes: Attributes = {
      ...common,
      [ATTR.operationName]: OPERATION.invokeAgent,
      [ATTR.agentName]: agent,
      [ATTR.conversationId]: c.conversationId,
      ...harnessAttributes(c),
    };
    if (info.attemptCount !== undefined) attributes[HARNESS_ATTR.attemptCount] = info.attemptCount;
    const parent = submissionContext(c.submissionId);
    const span = tracer.startSpan(`${OPERATION.invokeAgent} ${agent}`, { kind: SpanKind.INTERNAL, attributes, links, startTime: spanClock() }, parent);
    const spans: AttemptSpans = { span, ctx: trace.setSpan(parent, span), agent, turns: new Map(), tools: new Map() };
    attempts.set(c.attemptId, spans);
    return spans;
  }

  function endAttempt(attemptId: string, spans: AttemptSpans): void {
    // Children the attempt left open (it was aborted mid-call): end them with it.
    const at = spanClock();
    for (const turn of spans.turns.values()) turn.span.end(at);
    for (const tool of spans.tools.values()) tool.end(at);
    spans.span.end(at);
    attempts.delete(attemptId);
  }

  const interceptor: Interceptor = async (info, next) => {
    const c = info.correlation;
    if (info.kind === "attempt") {
      const spans = startAttempt(info);
      if (!spans) return next();
      try {
        await context.with(spans.ctx, next);
      } catch (err) {
        failed(spans.span, err);
        throw err;
      } finally {
        endAttempt(c.attemptId!, spans);
      }
      return;
    }
    const spans = c.attemptId === undefined ? undefined : attempts.get(c.attemptId);
    const parent = spans?.ctx ?? (c.submissionId === undefined ? context.active() : submissionContext(c.submissionId));
    if (info.kind === "turn") {
      const model = info.model?.id ?? "unknown";
      const attributes: Attributes = { ...common, [ATTR.operationName]: OPERATION.chat, [ATTR.requestModel]: model, ...harnessAttributes(c) };
      if (info.model) attributes[ATTR.providerName] = providerName(info.model.provider);
      if (spans) attributes[ATTR.agentName] = spans.agent;
      const span = tracer.startSpan(`${OPERATION.chat} ${model}`, { kind: SpanKind.CLIENT, attributes, startTime: spanClock() }, parent);
      const pending: Pending = { span, startedAt: Date.now(), returned: false, completed: spans === undefined, firstChunk: false };
      if (spans && c.turnId !== undefined) {
        spans.turns.set(c.turnId, pending);
        spans.current = pending;
      }
      try {
        await context.with(trace.setSpan(parent, span), next);
      } catch (err) {
        failed(span, err);
        pending.completed = true; // no response will describe it
        throw err;
      } finally {
        pending.returned = true;
        endPending(pending);
      }
      return;
    }
    if (info.kind === "tool") {
      const name = info.toolName ?? "unknown";
      const attributes: Attributes = {
        ...common,
        [ATTR.operationName]: OPERATION.executeTool,
        [ATTR.toolName]: name,
        [ATTR.toolType]: "function",
        ...harnessAttributes(c),
      };
      if (info.callId !== undefined) attributes[ATTR.toolCallId] = info.callId;
      const span = tracer.startSpan(`${OPERATION.executeTool} ${name}`, { kind: SpanKind.INTERNAL, attributes, startTime: spanClock() }, parent);
      if (spans && info.callId !== undefined) spans.tools.set(info.callId, span);
      try {
        await context.with(trace.setSpan(parent, span), next);
      } catch (err) {
        failed(span, err);
        throw err;
      } finally {
        span.end(spanClock());
        if (spans && info.callId !== undefined) spans.tools.delete(info.callId);
      }
      return;
    }
    return next();
  };

  const observer: Observer = (event: HarnessEvent) => {
    const c = event.correlation;
    const spans = c.attemptId === undefined ? undefined : attempts.get(c.attemptId);
    switch (event.type) {
      case "delta": {
        const turn = spans?.current;
        if (turn && !turn.firstChunk) {
          turn.firstChunk = true;
          turn.span.setAttribute(ATTR.timeToFirstChunk, (Date.now() - turn.startedAt) / 1000);
        }
        return;
      }
      case "model_response": {
        const attributes: Attributes = {
          [ATTR.operationName]: OPERATION.chat,
          [ATTR.providerName]: providerName(event.provider),
          [ATTR.requestModel]: event.model,
          [ATTR.responseModel]: event.responseModel ?? event.model,
        };
        const failedStop = event.stopReason === "error" || event.stopReason === "aborted";
        if (failedStop) attributes[ATTR.errorType] = event.stopReason;
        if (event.durationMs !== undefined) duration.record(event.durationMs / 1000, attributes);
        tokenUsage.record(event.usage.input, { ...attributes, [ATTR.tokenType]: "input" });
        tokenUsage.record(event.usage.output, { ...attributes, [ATTR.tokenType]: "output" });
        const turn = c.turnId === undefined ? undefined : spans?.turns.get(c.turnId);
        if (!turn) return;
        const span = turn.span;
        span.setAttributes({
          [ATTR.providerName]: providerName(event.provider),
          [ATTR.responseModel]: event.responseModel ?? event.model,
          [ATTR.finishReasons]: [finishReason(event.stopReason)],
          [ATTR.inputTokens]: event.usage.input,
          [ATTR.outputTokens]: event.usage.output,
          [ATTR.cacheReadTokens]: event.usage.cacheRead,
          [ATTR.cacheCreationTokens]: event.usage.cacheWrite,
        });
        if (event.usage.reasoning !== undefined) span.setAttribute(ATTR.reasoningTokens, event.usage.reasoning);
        if (event.responseId !== undefined) span.setAttribute(ATTR.responseId, event.responseId);
        if (failedStop) {
          span.setAttribute(ATTR.errorType, event.stopReason);
          span.setStatus({ code: SpanStatusCode.ERROR, message: event.error ?? event.stopReason });
        }
        spans!.span.setAttribute(ATTR.providerName, providerName(event.provider));
        if (spans!.current === turn) spans!.current = undefined;
        spans!.turns.delete(c.turnId!);
        turn.completed = true;
        endPending(turn);
        return;
      }
      case "submission_spawned": {
        const link: Link = {
          context: submissionSpanContext(event.childSubmissionId),
          attributes: { [HARNESS_ATTR.link]: "child", [HARNESS_ATTR.childSubmissionId]: event.childSubmissionId },
        };
        const tool = spans?.tools.get(event.callId);
        const target = tool ?? spans?.span;
        if (!target) return;
        target.addLink(link);
        if (tool) tool.setAttribute(HARNESS_ATTR.childSubmissionId, event.childSubmissionId);
        return;
      }
      case "operation_ended":
        if (spans && event.error !== "") spans.span.setStatus({ code: SpanStatusCode.ERROR, message: event.error });
        return;
      case "recovery":
        recoveries.add(1, { [HARNESS_ATTR.decision]: event.decision, [ATTR.agentName]: c.sessionKey.agent });
        if (spans) {
          spans.span.addEvent("harness.recovery", { [HARNESS_ATTR.decision]: event.decision, detail: event.detail });
        } else if (event.decision === "lease_reclaimed") {
          lostAttempt(c, event.detail);
        }
        return;
      case "submission_settled": {
        const { status, errorCode } = event.payload;
        settled.add(1, { [ATTR.agentName]: c.sessionKey.agent, [HARNESS_ATTR.status]: status, [HARNESS_ATTR.errorCode]: errorCode ?? "none" });
        spans?.span.addEvent("harness.submission_settled", { [HARNESS_ATTR.status]: status, [HARNESS_ATTR.errorCode]: errorCode ?? "none" });
        return;
      }
      default:
        return;
    }
  };

  /** The stand-in span of an attempt whose process died (this process reclaimed its lease). */
  function lostAttempt(c: Correlation, detail: string): void {
    if (c.submissionId === undefined || c.attemptId === undefined || lost.has(c.attemptId)) return;
    lost.add(c.attemptId);
    if (lost.size > 10_000) lost.delete(lost.values().next().value!);
    const agent = c.sessionKey.agent;
    const span = tracer.startSpan(
      `${OPERATION.invokeAgent} ${agent}`,
      {
        kind: SpanKind.INTERNAL,
        startTime: spanClock(),
        attributes: {
          ...common,
          [ATTR.operationName]: OPERATION.invokeAgent,
          [ATTR.agentName]: agent,
          [ATTR.conversationId]: c.conversationId,
          ...harnessAttributes(c),
          [HARNESS_ATTR.attemptLost]: true,
          [ATTR.errorType]: "attempt_lost",
        },
      },
      submissionContext(c.submissionId),
    );
    span.setStatus({ code: SpanStatusCode.ERROR, message: `attempt lost: ${detail}` });
    span.end(spanClock());
  }

  return { observer, interceptor };
}

/** The harness's ids of a span. */
function harnessAttributes(c: Correlation): Attributes {
  const attributes: Attributes = { [HARNESS_ATTR.instance]: c.sessionKey.instance, [HARNESS_ATTR.session]: c.sessionKey.session };
  if (c.submissionId !== undefined) attributes[HARNESS_ATTR.submissionId] = c.submissionId;
  if (c.attemptId !== undefined) attributes[HARNESS_ATTR.attemptId] = c.attemptId;
  if (c.turnId !== undefined) attributes[HARNESS_ATTR.turnId] = c.turnId;
  return attributes;
}

/** Marks a span failed with a thrown error. */
function failed(span: Span, err: unknown): void {
  const error = err instanceof Error ? err : new Error(String(err));
  span.recordException(error);
  span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
  const code = (err as { code?: unknown }).code;
  span.setAttribute(ATTR.errorType, typeof code === "string" ? code : error.name);
}
