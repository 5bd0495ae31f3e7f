import { createHash } from "node:crypto";
import { ROOT_CONTEXT, trace, TraceFlags, type Context, type SpanContext } from "@opentelemetry/api";

/**
 * The span context that stands for a submission: its trace id and span id derived from the
 * submission id (a dispatch id is unique per deployment), so every process that runs one of its
 * attempts (a recovered attempt after a crash, a continuation on another Lambda invocation, a
 * parent resumed by its children) puts its spans in the same trace without sharing any state,
 * and a child's spans can link to its parent's trace knowing only the parent's id. No span is
 * ever exported with this id: it is the remote parent of each attempt's `invoke_agent` span.
 *
 * Sampled, so a parent-based sampler keeps every attempt of a submission; to sample
 * submissions, give the SDK's `ParentBasedSampler` a `TraceIdRatioBasedSampler` as its
 * `remoteParentSampled`: the trace id is the same in every process, so is the decision.
 */
export function submissionSpanContext(submissionId: string): SpanContext {
  const hex = createHash("sha256").update(`resolute-harness/submission/${submissionId}`).digest("hex");
  // All-zero ids are invalid; a sha-256 prefix of zeros is not going to happen, but stay valid.
  const traceId = /^0+$/.test(hex.slice(0, 32)) ? `1${hex.slice(1, 32)}` : hex.slice(0, 32);
  const spanId = /^0+$/.test(hex.slice(32, 48)) ? `1${hex.slice(33, 48)}` : hex.slice(32, 48);
  return { traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true };
}

/** A context whose parent span is the submission's ({@link submissionSpanContext}). */
export function submissionContext(submissionId: string): Context {
  return trace.setSpanContext(ROOT_CONTEXT, submissionSpanContext(submissionId));
}
