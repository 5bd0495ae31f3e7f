/**
 * Every agent is an MCP server (issue 36): what an MCP `tools/call` round trip costs against the
 * same exchange through `POST /agents/…?wait=true`, embedded and on the local cloud, measured side
 * by side (alternating, one sample of each in turn, so load on the shared machine hits both).
 *
 * - embedded: `npm start`'s own server (SQLite, the keyless model) in a child process
 * - local cloud: the basic example's agents behind the local function URL (the http function's
 *   Hono app, a worker Lambda, DynamoDB Local + fauxqs)
 *
 * The MCP side is the SDK's `Client` on one connection (each call one stateless POST answered as
 * SSE, its result read from the log); the HTTP side one fetch whose 200 carries the outcome.
 *
 *   npm run bench -- mcp-server        # the emulators and the local cloud are started here
 */
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { exampleAssembly } from "../dev/local-cloud/cloud-assembly.ts";
import { startLocalCloud } from "../dev/local-cloud/local-cloud.ts";
import { startEmulators } from "../test/support/emulators.ts";
import { startQuickstart } from "./quickstart-process.ts";
import { figure, note } from "./report.ts";
import { percentile } from "./stats.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const WARMUP = 10;
const EMBEDDED_SAMPLES = 200;
const CLOUD_SAMPLES = 40;
const MESSAGE = "hello there";

let seq = 0;

/** One shape's round trips: `tools/call` and `?wait=true` alternated, `samples` of each. */
async function sideBySide(label: string, url: string, samples: number): Promise<{ mcp: number[]; http: number[] }> {
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", url)));
  const mcpCall = async () => {
    const result = await client.callTool({ name: "assistant", arguments: { message: MESSAGE, instance: `mcp-bench-${process.pid}-${++seq}` } });
    if (result.isError) throw new Error(`tools/call failed: ${JSON.stringify(result.content)}`);
  };
  const httpCall = async () => {
    const res = await fetch(`${url}/agents/assistant/http-bench-${process.pid}-${++seq}?wait=true`, { method: "POST", body: JSON.stringify({ kind: "user", body: MESSAGE }) });
    const body = (await res.json()) as { status?: string };
    if (res.status !== 200 || body.status !== "succeeded") throw new Error(`?wait=true answered ${res.status}: ${JSON.stringify(body)}`);
  };
  const timed = async (f: () => Promise<void>) => {
    const t0 = performance.now();
    await f();
    return performance.now() - t0;
  };
  try {
    for (let i = 0; i < WARMUP; i++) {
      await mcpCall();
      await httpCall();
    }
    const mcp: number[] = [];
    const http: number[] = [];
    for (let i = 0; i < samples; i++) {
      // Alternate which goes first, so neither always follows the other's cleanup.
      if (i % 2 === 0) {
        mcp.push(await timed(mcpCall));
        http.push(await timed(httpCall));
      } else {
        http.push(await timed(httpCall));
        mcp.push(await timed(mcpCall));
      }
    }
    console.log(`${label} (${samples} of each, alternated, one at a time, after ${WARMUP} warm-up):`);
    figure("tools/call round trip, p50", percentile(mcp, 50), "ms");
    figure("tools/call round trip, p99", percentile(mcp, 99), "ms");
    figure("POST ?wait=true round trip, p50", percentile(http, 50), "ms");
    figure("POST ?wait=true round trip, p99", percentile(http, 99), "ms");
    figure("ratio tools/call / ?wait=true, p50", percentile(mcp, 50) / percentile(http, 50), "×", undefined, 2);
    return { mcp, http };
  } finally {
    await client.close();
  }
}

/** The figures, embedded, then on the local cloud (the emulators started here, after the embedded run). */
export async function benchMcpServer(): Promise<void> {
  const server = await startQuickstart({ fromSource: true });
  try {
    note(`embedded: npm start (SQLite, keyless model) at ${server.url}`);
    await sideBySide("embedded", server.url, EMBEDDED_SAMPLES);
  } finally {
    await server.stop();
  }

  const emulators = await startEmulators();
  Object.assign(process.env, emulators.env);
  const logs: string[] = [];
  let cloud: Awaited<ReturnType<typeof startLocalCloud>> | undefined;
  try {
    cloud = await startLocalCloud({
      assembly: exampleAssembly(resolve(ROOT, "examples/basic/agents.ts")).dir,
      agentsModule: resolve(ROOT, "examples/basic/agents.ts"),
      name: `bench-mcp-${process.pid}`,
      workers: 1,
      sweeperRateMs: false,
      log: (line, source) => logs.push(`[${source}] ${line}`),
      onError: (err, source) => logs.push(`[event-source ${source}] ${String(err)}`),
    });
    note(`local cloud: the http function and one worker, DynamoDB Local + fauxqs, at ${cloud.url}`);
    await sideBySide("local cloud", cloud.url, CLOUD_SAMPLES);
  } catch (err) {
    process.stderr.write(`--- local cloud output (last 40 lines) ---\n${logs.slice(-40).join("\n")}\n`);
    throw err;
  } finally {
    await cloud?.stop();
    await emulators.stop();
  }
}
