/**
 * X-Ray on Lambda through the Powertools Tracer (ADR 0030): the harness's AWS SDK clients as
 * subsegments, each invocation a `## <function>` subsegment, and each attempt, model call and
 * tool call a subsegment named after the GenAI conventions' spans, annotated with the ids X-Ray
 * filter expressions search by. No request, response or error bodies are recorded (records may
 * hold user content).
 */
import { Tracer } from "@aws-lambda-powertools/tracer";
import type { Interceptor, OpInfo } from "../ports/observer.ts";
import type { LambdaTracingHooks } from "./tracing-hooks.ts";

/** The subsegment of an interceptor's operation, or undefined for those not traced (operations). */
export function xraySubsegmentName(info: OpInfo): string | undefined {
  switch (info.kind) {
    case "attempt":
      return `invoke_agent ${info.correlation.sessionKey.agent}`;
    case "turn":
      return `chat ${info.model?.id ?? "model"}`;
    case "tool":
      return `execute_tool ${info.toolName ?? "tool"}`;
    default:
      return undefined;
  }
}

/** The annotations of an operation's subsegment (X-Ray indexes annotations for filter expressions). */
export function xrayAnnotations(info: OpInfo): Record<string, string | number> {
  const c = info.correlation;
  return {
    agent: c.sessionKey.agent,
    ...(c.submissionId ? { submissionId: c.submissionId } : {}),
    ...(c.attemptId ? { attemptId: c.attemptId } : {}),
    ...(info.attemptCount !== undefined ? { attemptCount: info.attemptCount } : {}),
    ...(info.parent ? { parentSubmissionId: info.parent.submissionId } : {}),
    ...(info.model ? { provider: info.model.provider, model: info.model.id } : {}),
    ...(info.toolName ? { toolName: info.toolName } : {}),
    ...(info.callId ? { callId: info.callId } : {}),
  };
}

/**
 * The X-Ray hooks. The attempt's subsegment is the current segment while it runs, so the store's
 * and queue's calls nest under it; model and tool calls open theirs under it without becoming
 * current (tool calls may run in parallel).
 */
export function xrayTracingHooks(tracer: Tracer = new Tracer()): LambdaTracingHooks {
  const interceptor: Interceptor = async (info, next) => {
    const name = xraySubsegmentName(info);
    const parent = name ? tracer.getSegment() : undefined;
    if (!name || !parent) return next();
    const sub = parent.addNewSubsegment(name);
    for (const [key, value] of Object.entries(xrayAnnotations(info))) sub.addAnnotation(key, value);
    const current = info.kind === "attempt";
    if (current) tracer.setSegment(sub);
    try {
      await next();
    } catch (err) {
      sub.addFaultFlag();
      throw err;
    } finally {
      sub.close();
      if (current) tracer.setSegment(parent);
    }
  };
  return {
    interceptors: [interceptor],
    instrumentClient: (client) => tracer.captureAWSv3Client(client),
    aroundInvocation: async (work) => {
      const parent = tracer.getSegment();
      const sub = parent?.addNewSubsegment(`## ${process.env.AWS_LAMBDA_FUNCTION_NAME ?? "handler"}`);
      if (sub) tracer.setSegment(sub);
      tracer.annotateColdStart();
      tracer.addServiceNameAnnotation();
      try {
        return await work();
      } catch (err) {
        sub?.addFaultFlag();
        throw err;
      } finally {
        sub?.close();
        if (parent) tracer.setSegment(parent);
      }
    },
  };
}
