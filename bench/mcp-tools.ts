/**
 * `npm run bench -- mcp-tools`: what an MCP tool call costs over a local tool call (issue 36 part
 * 1), side by side in one run, on the embedded shape (memory store, the keyless model calling
 * `/echo {"text": …}`): a local `echo` tool, the fixture MCP server's `echo` over stdio (started
 * by each attempt) and over streamable HTTP (a server already running; each attempt opens a
 * session). Rounds alternate the three, so they share the machine's load. Two figures each:
 *
 * - the call: the tool boundary (a tool interceptor: validation, the call, its result) for one
 *   call, p50 / p95;
 * - the submission: dispatch → settled, one tool call and two model turns, which for MCP includes
 *   connecting and listing the tools at attempt start.
 *
 * And the worker's Lambda bundle (as the construct builds it) of an agents module with MCP tools
 * against the basic example's: what a cold start parses, and the SDK's lazy chunks.
 */
import { defineTool } from "../src/agent/define-tool.ts";
import { localModel } from "../src/agent/local-model.ts";
import { mcpTools } from "../src/agent/mcp-tools.ts";
import * as schema from "../src/agent/tool-schema.ts";
import { createMemoryStore } from "../src/memory/index.ts";
import type { Interceptor } from "../src/ports/observer.ts";
import { createRuntime, type Runtime } from "../src/runtime/runtime.ts";
import { fixtureLog, startHttpFixture, stdioFixture } from "../test/support/mcp-fixture.ts";
import { resolve } from "node:path";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { bundleLambdas, removeBundles } from "./lambda-bundles.ts";
import { figure, note } from "./report.ts";
import { percentile } from "./stats.ts";

const ROUNDS = Number(process.env.BENCH_MCP_ROUNDS || 30);
const WARMUP = 3;

type Kind = "local" | "stdio" | "http";

export async function benchMcpTools(): Promise<void> {
  const http = await startHttpFixture(fixtureLog());
  const echo = defineTool({
    name: "echo",
    label: "Echo",
    description: "Echoes a text.",
    parameters: schema.obj({ text: schema.str() }),
    execute: async (_id, { text }) => ({ content: [{ type: "text", text: `echo: ${text}` }], details: {} }),
  });
  const tools = {
    local: () => [echo],
    stdio: () => [mcpTools(stdioFixture(fixtureLog()))],
    http: () => [mcpTools({ url: http.url })],
  };
  const calls: Record<Kind, number[]> = { local: [], stdio: [], http: [] };
  const submissions: Record<Kind, number[]> = { local: [], stdio: [], http: [] };
  let current: Kind = "local";
  let measuring = false;
  const timeTool: Interceptor = async (info, next) => {
    if (info.kind !== "tool") return next();
    const t = performance.now();
    await next();
    if (measuring) calls[current].push(performance.now() - t);
  };
  const stdio = tools.stdio();
  const runtime: Runtime = createRuntime({
    store: createMemoryStore(),
    interceptors: [timeTool],
    agents: {
      local: { initialize: () => ({ ...localModel(), tools: tools.local() }) },
      stdio: { initialize: () => ({ ...localModel(), tools: stdio }) },
      http: { initialize: () => ({ ...localModel(), tools: tools.http() }) },
    },
  });
  await runtime.start();
  try {
    for (let round = 0; round < WARMUP + ROUNDS; round++) {
      measuring = round >= WARMUP;
      for (const kind of ["local", "stdio", "http"] as const) {
        current = kind;
        const t = performance.now();
        const { submissionId } = await runtime.dispatch({ agent: kind, instance: `bench-${round}`, message: { kind: "user", body: `/echo {"text":"round ${round}"}` } });
        const settled = await runtime.wait(submissionId);
        if (settled.status !== "succeeded") throw new Error(`${kind}: ${JSON.stringify(settled)}`);
        if (measuring) submissions[kind].push(performance.now() - t);
      }
    }
  } finally {
    await runtime.close();
    await http.kill();
  }
  note(`${ROUNDS} rounds (after ${WARMUP} warm-up), each: a submission per kind, alternating; load average ${loadavg()[0]!.toFixed(1)}`);
  for (const kind of ["local", "stdio", "http"] as const) {
    figure(`${kind}: tool call p50`, percentile(calls[kind], 50), "ms", undefined, 2);
    figure(`${kind}: tool call p95`, percentile(calls[kind], 95), "ms", undefined, 2);
    figure(`${kind}: submission p50 (dispatch → settled)`, percentile(submissions[kind], 50), "ms", undefined, 1);
  }
  for (const kind of ["stdio", "http"] as const) {
    figure(`${kind}: call overhead over local (p50)`, percentile(calls[kind], 50) - percentile(calls.local, 50), "ms", undefined, 2);
    figure(`${kind}: submission overhead over local (p50, connecting included)`, percentile(submissions[kind], 50) - percentile(submissions.local, 50), "ms", undefined, 1);
  }
  await bundleFigures();
}

async function bundleFigures(): Promise<void> {
  const root = fileURLToPath(new URL("../", import.meta.url));
  const plain = (await bundleLambdas(resolve(root, "examples/basic/agents.ts"))).find((b) => b.role === "worker")!;
  const mcp = (await bundleLambdas(resolve(root, "test/support/local-cloud-fixtures/mcp-agents.ts"))).find((b) => b.role === "worker")!;
  try {
    const outputs = mcp.metafile.outputs;
    const sdkBytes = Object.values(outputs).reduce(
      (sum, o) => sum + Object.entries(o.inputs).reduce((n, [path, i]) => n + (path.includes("@modelcontextprotocol/sdk/") ? i.bytesInOutput : 0), 0),
      0,
    );
    note("worker bundle (minified, as the construct builds it):");
    figure("cold-start bytes, basic agents", plain.loadBytes / 1024, "KiB");
    figure("cold-start bytes, agents with MCP tools", mcp.loadBytes / 1024, "KiB");
    figure("MCP SDK code in lazy chunks (loaded at the first MCP attempt)", sdkBytes / 1024, "KiB");
    figure("asset total, basic agents", plain.totalBytes / 1024, "KiB");
    figure("asset total, agents with MCP tools", mcp.totalBytes / 1024, "KiB");
  } finally {
    removeBundles([plain]);
    removeBundles([mcp]);
  }
}
