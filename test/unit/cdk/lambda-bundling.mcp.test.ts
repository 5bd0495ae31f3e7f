/**
 * The MCP SDK loads lazily (issue 36 part 1, ADR 0050): in the worker's Lambda bundle of an agents
 * module that uses `mcpTools`, no SDK code is in what a cold start parses (the entry chunk and its
 * static imports), nor in what the session driver loads with it (every first attempt): it lies in
 * chunks of their own, loaded when an attempt of an agent with MCP tools first connects.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { expect, it } from "vitest";
import { LAMBDA_ENTRY_FILE, lambdaBuildOptions, staticClosure } from "../../../src/cdk/lambda-bundling.ts";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

it("the worker bundle of an agents module with MCP tools parses no MCP SDK at cold start", async () => {
  const outdir = mkdtempSync(join(tmpdir(), "harness-mcp-bundle-"));
  try {
    const result = await build(
      lambdaBuildOptions({
        entry: join(repoRoot, "src/lambda/worker.ts"),
        agentsEntry: join(repoRoot, "test/support/local-cloud-fixtures/mcp-agents.ts"),
        outdir,
        sourceMap: false,
      }),
    );
    const outputs = result.metafile.outputs;
    const entry = Object.keys(outputs).find((p) => p.endsWith(`/${LAMBDA_ENTRY_FILE}`))!;
    const loaded = new Set(staticClosure(result.metafile, entry));
    const holding = (what: string) => Object.keys(outputs).filter((p) => Object.keys(outputs[p]!.inputs).some((i) => i.includes(what)));
    const sdk = holding("node_modules/@modelcontextprotocol/sdk/");
    expect(sdk.length, "the SDK is in the asset").toBeGreaterThan(0);
    expect(sdk.filter((p) => loaded.has(p)), "no SDK code in the cold-start chunks").toEqual([]);
    expect(holding("src/drive/mcp-connection.ts").filter((p) => loaded.has(p))).toEqual([]);
    const [driveChunk] = holding("src/drive/drive.ts");
    const withDrive = new Set(staticClosure(result.metafile, driveChunk!));
    expect(sdk.filter((p) => withDrive.has(p)), "no SDK code in the chunks the session driver loads").toEqual([]);
    // mcpTools itself (no SDK) is in the agents module, loaded with it.
    expect(holding("src/agent/mcp-tools.ts").length).toBeGreaterThan(0);
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}, 120_000);
