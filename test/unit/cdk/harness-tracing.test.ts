/**
 * The construct's `tracing` option (issue 27, ADR 0030): `xray` turns on Lambda's active tracing
 * on every function and bundles the Powertools Tracer's hooks; `openTelemetry` bundles the app's
 * setup module and the GenAI hooks into every function, run at cold start before the handler.
 * Without the option nothing of either is bundled.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { App, Stack } from "aws-cdk-lib";
import nag from "cdk-nag";
import { afterAll, describe, expect, it } from "vitest";
import { Harness, type HarnessProps } from "../../../src/cdk/harness.ts";
import { HARNESS_FUNCTION_ROLES, type HarnessFunctionRole } from "../../../src/lambda/env.ts";
import { cdkFixture, functionProperties, logicalIdOf, standInHandlers, synthHarness, type Synth } from "../../support/cdk-synth.ts";

const handlerEntries = standInHandlers("tracing-handler.mjs");
// Given, so no synth starts a child process to discover them.
const agentNames = ["echo"];

const synth = (props: Partial<HarnessProps>): Synth => synthHarness({ agentNames, ...props }, { env: true, handler: "tracing-handler.mjs" });

function actionsOf(s: Synth, role: HarnessFunctionRole): string[] {
  const roleId = logicalIdOf(s, s.harness.functions[role].role!);
  return Object.values(s.template.findResources("AWS::IAM::Policy")).flatMap((policy: any) =>
    policy.Properties.Roles.some((r: { Ref?: string }) => r.Ref === roleId)
      ? policy.Properties.PolicyDocument.Statement.flatMap((st: { Action: string | string[] }) => (Array.isArray(st.Action) ? st.Action : [st.Action]))
      : [],
  );
}

/** `entry` and the files it imports statically, transitively (minified ESM: `from"./x.mjs"`, `import"./x.mjs"`). */
function staticFiles(entry: string): string[] {
  const seen = new Set<string>([entry]);
  const pending = [entry];
  while (pending.length > 0) {
    const file = pending.pop()!;
    for (const m of readFileSync(file, "utf8").matchAll(/(?:from|import)\s*["'](\.{1,2}\/[^"']+\.mjs)["']/g)) {
      const next = join(dirname(file), m[1]!);
      if (!seen.has(next)) {
        seen.add(next);
        pending.push(next);
      }
    }
  }
  return [...seen];
}

const nagFindings = (s: Synth): string[] =>
  new nag.AwsSolutionsChecks()
    .validateScope(s.stack)
    .violations.map((v) => `${v.ruleName} at ${v.violatingResources.map((r) => r.constructPath).join(", ")}`)
    .filter((line) => line.includes("/Harness/"));

describe("Harness: tracing", () => {
  it("xray: active tracing on every function, roles that may write traces, no bodies recorded, no cdk-nag finding", () => {
    const s = synth({ tracing: { xray: true } });
    for (const role of HARNESS_FUNCTION_ROLES) {
      const fn = functionProperties(s, role);
      expect(fn.TracingConfig, role).toEqual({ Mode: "Active" });
      expect(fn.Environment.Variables, role).toMatchObject({
        POWERTOOLS_TRACER_CAPTURE_RESPONSE: "false",
        POWERTOOLS_TRACER_CAPTURE_ERROR: "false",
      });
      expect(actionsOf(s, role), role).toEqual(expect.arrayContaining(["xray:PutTraceSegments", "xray:PutTelemetryRecords"]));
    }
    expect(nagFindings(s)).toEqual([]);
  }, 120_000);

  it("off by default: no tracing mode, no tracer variables, no X-Ray grant", () => {
    const s = synth({});
    for (const role of HARNESS_FUNCTION_ROLES) {
      expect(functionProperties(s, role).TracingConfig, role).toBeUndefined();
      expect(Object.keys(functionProperties(s, role).Environment.Variables).filter((k) => k.startsWith("POWERTOOLS_TRACER")), role).toEqual([]);
      expect(actionsOf(s, role).filter((a) => a.startsWith("xray:")), role).toEqual([]);
    }
  }, 120_000);

  it("refuses a setup module that does not exist, naming the option", () => {
    expect(() => synth({ tracing: { openTelemetry: { setupEntry: "/nowhere/otel-setup.ts" } } })).toThrow(
      /tracing\.openTelemetry\.setupEntry \/nowhere\/otel-setup\.ts does not exist/,
    );
  });

  describe("bundles (synth with bundling on)", () => {
    const outdirs: string[] = [];
    afterAll(() => {
      for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
    });

    /** Synthesizes with bundling on; answers each function's entry file (its asset's `<file>` of `<file>.handler`). */
    function bundled(props: Partial<HarnessProps>): Record<HarnessFunctionRole, string> {
      const outdir = mkdtempSync(join(tmpdir(), "harness-tracing-"));
      outdirs.push(outdir);
      const app = new App({ outdir });
      const stack = new Stack(app, "Test", { env: { account: "111122223333", region: "eu-west-1" } });
      new Harness(stack, "Harness", { agentsEntry: cdkFixture("agents.ts"), agentNames, handlerEntries, sourceMaps: false, ...props });
      const template = app.synth().getStackByName("Test").template as { Resources: Record<string, { Type: string; Properties: any }> };
      const assetOf = (role: HarnessFunctionRole): string => {
        const prefix = `Harness${role[0]!.toUpperCase()}${role.slice(1)}Function`;
        const [, fn] = Object.entries(template.Resources).find(([id, r]) => r.Type === "AWS::Lambda::Function" && id.startsWith(prefix))!;
        const file = `${String(fn.Properties.Handler).replace(/\.handler$/, "")}.mjs`;
        return join(outdir, `asset.${String(fn.Properties.Code.S3Key).replace(/\.zip$/, "")}`, file);
      };
      return Object.fromEntries(HARNESS_FUNCTION_ROLES.map((role) => [role, assetOf(role)])) as Record<HarnessFunctionRole, string>;
    }
    const code = (entry: string): string =>
      readdirSync(dirname(entry), { recursive: true, encoding: "utf8" })
        .filter((f) => f.endsWith(".mjs"))
        .map((f) => readFileSync(join(dirname(entry), f), "utf8"))
        .join("\n");
    // One bundle per process on Lambda; here two bundles share the process and its global registry.
    const run = async (entry: string) => {
      delete (globalThis as Record<symbol, unknown>)[Symbol.for("resolute-harness.lambda-tracing-hooks")];
      return runBundle(entry);
    };
    const runBundle = async (entry: string) =>
      ((await import(pathToFileURL(entry).href)) as { handler: () => Promise<{ agents: string[]; setupRuns: number; hooks: string[][] }> }).handler();

    it("openTelemetry and xray: every function runs the setup module at cold start and installs both hooks", async () => {
      const assets = bundled({ tracing: { xray: true, openTelemetry: { setupEntry: cdkFixture("otel-setup.ts") } } });
      for (const role of HARNESS_FUNCTION_ROLES) {
        const text = code(assets[role]);
        expect(text, role).toContain("deployment.environment.name");
        expect(text, role).toContain("gen_ai.operation.name");
        expect(text, role).not.toContain("#harness-otel-setup");
      }
      const answer = await run(assets.worker);
      expect(answer.agents).toEqual(["echo"]);
      expect(answer.setupRuns).toBe(1);
      // The result-schema worker thread's entry loads neither the setup module nor the tracer.
      const thread = staticFiles(join(dirname(assets.worker), "result-schema-worker.mjs"));
      expect(thread.length).toBeGreaterThan(0);
      for (const file of thread) {
        expect(readFileSync(file, "utf8"), file).not.toContain("deployment.environment.name");
        expect(readFileSync(file, "utf8"), file).not.toContain("captureAWSv3Client");
      }
      // X-Ray's hooks and OpenTelemetry's (their order is esbuild's order of injected modules).
      expect(answer.hooks.map((keys) => keys.join(" ")).sort()).toEqual([
        "aroundInvocation instrumentClient interceptors",
        "aroundInvocation interceptors observers",
      ]);
    }, 120_000);

    it("without the option nothing of either is bundled and no hook is installed", async () => {
      const assets = bundled({});
      const text = code(assets.worker);
      expect(text).not.toContain("gen_ai.operation.name");
      expect(text).not.toContain("captureAWSv3Client");
      const answer = await run(assets.worker);
      expect(answer.hooks).toEqual([]);
    }, 120_000);
  });
});
