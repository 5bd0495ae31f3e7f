/**
 * X-Ray on Lambda (the construct's `tracing.xray`): the Powertools Tracer's hooks, run as Lambda
 * runs them (its environment variables, a trace header, a daemon address), send to a UDP
 * "daemon" on loopback: the invocation's `## <function>` subsegment annotated with the cold start,
 * an `invoke_agent` subsegment inside it annotated with the submission, and `chat` and
 * `execute_tool` subsegments inside that; a failure marks its subsegment as a fault.
 */
import { createSocket, type Socket } from "node:dgram";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OpInfo } from "../../../src/ports/observer.ts";

interface Subsegment {
  id: string;
  name: string;
  parent_id?: string;
  trace_id?: string;
  fault?: boolean;
  annotations?: Record<string, string | number | boolean>;
}

let daemon: Socket;
const received: Subsegment[] = [];
const TRACE_ID = "1-5759e988-bd862e3fe1be46a994272793";
const FACADE_ID = "53995c3f42cd8ad8";

beforeAll(async () => {
  daemon = createSocket("udp4");
  daemon.on("message", (msg) => {
    // `{"format":"json","version":1}\n<segment JSON>`
    const body = msg.toString("utf8").split("\n")[1];
    if (body) received.push(JSON.parse(body) as Subsegment);
  });
  await new Promise<void>((resolve) => daemon.bind(0, "127.0.0.1", resolve));
  const { port } = daemon.address();
  // What Lambda sets for a function with active tracing (read when the X-Ray SDK loads).
  Object.assign(process.env, {
    AWS_EXECUTION_ENV: "AWS_Lambda_nodejs22.x",
    AWS_LAMBDA_INITIALIZATION_TYPE: "on-demand",
    AWS_LAMBDA_FUNCTION_NAME: "harness-worker",
    LAMBDA_TASK_ROOT: "/var/task",
    _X_AMZN_TRACE_ID: `Root=${TRACE_ID};Parent=${FACADE_ID};Sampled=1`,
    AWS_XRAY_DAEMON_ADDRESS: `127.0.0.1:${port}`,
    AWS_XRAY_CONTEXT_MISSING: "IGNORE_ERROR",
    POWERTOOLS_SERVICE_NAME: "harness-test",
  });
});
afterAll(() => {
  daemon?.close();
  for (const name of ["AWS_EXECUTION_ENV", "AWS_LAMBDA_INITIALIZATION_TYPE", "AWS_LAMBDA_FUNCTION_NAME", "LAMBDA_TASK_ROOT", "_X_AMZN_TRACE_ID", "AWS_XRAY_DAEMON_ADDRESS", "AWS_XRAY_CONTEXT_MISSING", "POWERTOOLS_SERVICE_NAME"]) {
    delete process.env[name];
  }
});

const correlation = {
  sessionKey: { agent: "assistant", instance: "xray-1", session: "default" },
  conversationId: "conv-1",
  submissionId: "sub-1",
  attemptId: "att-1",
};

async function waitFor(count: number): Promise<void> {
  for (let i = 0; i < 200 && received.length < count; i++) await new Promise((r) => setTimeout(r, 10));
}

describe("xrayTracingHooks", () => {
  it("sends the invocation, attempt, model and tool subsegments, nested and annotated, to the daemon", async () => {
    const { xrayTracingHooks } = await import("../../../src/lambda/xray-hooks.ts");
    const { aroundInvocation } = await import("../../../src/lambda/tracing-hooks.ts");
    const hooks = xrayTracingHooks();
    const intercept = hooks.interceptors![0]!;
    const attempt: OpInfo = { kind: "attempt", correlation, attemptCount: 2, parent: { submissionId: "sub-0", callId: "call-0" } };
    const turn: OpInfo = { kind: "turn", correlation: { ...correlation, turnId: "turn-1" }, model: { provider: "anthropic", id: "claude-sonnet-4-5" } };
    const tool: OpInfo = { kind: "tool", correlation, toolName: "clock", callId: "call-7" };
    const operation: OpInfo = { kind: "operation", correlation };

    await aroundInvocation([hooks], () =>
      intercept(attempt, async () => {
        await intercept(operation, async () => {});
        await intercept(turn, async () => {});
        await expect(intercept(tool, async () => Promise.reject(new Error("tool crashed")))).rejects.toThrow("tool crashed");
      }),
    );
    await waitFor(4);

    const byName = (prefix: string) => received.filter((s) => s.name.startsWith(prefix));
    expect(received.map((s) => s.name).sort()).toEqual(["## harness-worker", "chat claude-sonnet-4-5", "execute_tool clock", "invoke_agent assistant"]);
    const [invocation] = byName("## ");
    const [agent] = byName("invoke_agent");
    const [chat] = byName("chat ");
    const [call] = byName("execute_tool");
    // Nested under Lambda's facade segment, in the invocation's trace.
    expect(invocation).toMatchObject({ parent_id: FACADE_ID, trace_id: TRACE_ID });
    expect(invocation!.annotations).toMatchObject({ ColdStart: true, Service: "harness-test" });
    expect(agent).toMatchObject({ parent_id: invocation!.id, trace_id: TRACE_ID });
    expect(agent!.annotations).toEqual({
      agent: "assistant",
      submissionId: "sub-1",
      attemptId: "att-1",
      attemptCount: 2,
      parentSubmissionId: "sub-0",
    });
    expect(chat).toMatchObject({ parent_id: agent!.id, annotations: { provider: "anthropic", model: "claude-sonnet-4-5", submissionId: "sub-1" } });
    expect(call).toMatchObject({ parent_id: agent!.id, fault: true, annotations: { toolName: "clock", callId: "call-7" } });
    expect(agent!.fault).toBeUndefined();
  });
});
