import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { initProject } from "../../../src/cli/init-command.ts";

/**
 * `harness init`'s project, written as the installed package writes it (no checkout to pack): AWS
 * only with `--aws` (issue 37 point 6: the CDK made the project 383 MB). The project installed and
 * run is tested in test/e2e/package/ (first-hour.test.ts, create-resolute-harness.test.ts,
 * deploy-your-own-agents.test.ts).
 */
const root = mkdtempSync(join(tmpdir(), "harness-init-"));
const repo = JSON.parse(readFileSync(join(import.meta.dirname, "../../../package.json"), "utf8")) as { version: string; devDependencies: Record<string, string> };

afterAll(() => rmSync(root, { recursive: true, force: true }));

function init(dir: string, aws: boolean): { status: number; out: string; pkg: { dependencies: Record<string, string>; devDependencies: Record<string, string>; scripts: Record<string, string> } } {
  let out = "";
  const io = { stdout: { write: (t: string) => void (out += t), isTTY: false }, stderr: { write: (t: string) => void (out += t) }, env: {} };
  const status = initProject(join(root, dir), aws ? { aws: true } : {}, io);
  return { status, out, pkg: JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8")) };
}

describe("harness init: AWS is opt-in", () => {
  it("without --aws: no CDK app, no CDK package, a README without cdk commands", () => {
    const { status, out, pkg } = init("plain", false);
    expect(status).toBe(0);
    expect(out).toContain("Created");
    expect(existsSync(join(root, "plain", "app.ts"))).toBe(false);
    expect(existsSync(join(root, "plain", "cdk.json"))).toBe(false);
    expect(pkg.dependencies).toEqual({ "resolute-harness": repo.version });
    expect(pkg.devDependencies).toEqual({ "@types/node": repo.devDependencies["@types/node"], typescript: repo.devDependencies.typescript });
    expect(pkg.scripts).toEqual({ dev: "harness dev", start: "node main.ts", typecheck: "tsc" });
    const readme = readFileSync(join(root, "plain", "README.md"), "utf8");
    expect(readme).not.toContain("npx cdk");
    expect(readme).not.toContain("<!--");
    expect(readme).toContain("harness init --aws");
    expect(out).toContain("harness init --aws");
  });

  it("with --aws: app.ts, cdk.json, and the CDK and the construct's peers as dev dependencies", () => {
    const { status, out, pkg } = init("cloud", true);
    expect(status).toBe(0);
    expect(existsSync(join(root, "cloud", "app.ts"))).toBe(true);
    expect(readFileSync(join(root, "cloud", "app.ts"), "utf8")).toContain('new Stack(app, "Cloud")');
    expect(pkg.dependencies).toEqual({ "resolute-harness": repo.version });
    for (const name of ["aws-cdk-lib", "constructs", "esbuild", "aws-cdk", "@aws-sdk/client-dynamodb", "@aws-lambda-powertools/logger"]) {
      expect(pkg.devDependencies[name], name).toBe(repo.devDependencies[name]);
    }
    expect(pkg.scripts).toMatchObject({ synth: "cdk synth", deploy: "cdk deploy" });
    const readme = readFileSync(join(root, "cloud", "README.md"), "utf8");
    expect(readme).toContain("npx cdk deploy");
    expect(readme).not.toContain("<!--");
    expect(out).toContain("npx cdk synth");
  });
});
