/**
 * `npm run rehearse` (issue 35): a CDK app synthesized, brought up from its template with IAM
 * enforced, and a smoke conversation run through the function URL. The example app passes; the
 * variant with `secrets`, `callbacks`, `apiGateway` and `conversationRetention` passes too (its
 * tokens read from the secrets stand-in through the gate); a role stripped of one grant fails,
 * and the output names the function, the action and the resource.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { assemblyWithout } from "../../../dev/local-cloud/assembly-mutation.ts";
import { cachedAssembly, exampleAssembly, nodeApp } from "../../../dev/local-cloud/cloud-assembly.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const rehearse = (...args: string[]) =>
  spawnSync(process.execPath, ["--disable-warning=ExperimentalWarning", "scripts/rehearse.ts", ...args], { cwd: ROOT, encoding: "utf8", timeout: 600_000 });

describe("npm run rehearse", () => {
  it("passes on the example app: the turn, its tool and stream, a delayed message's cancel, an attachment, the deletion, the sweep and the dlq drain, with IAM on", { timeout: 900_000 }, () => {
    const assembly = exampleAssembly(`${ROOT}examples/basic/agents.ts`);
    const out = rehearse("--template", assembly.dir);
    expect(out.stdout, out.stderr).toContain("rehearsal passed");
    expect(out.stdout).toContain("✓ IAM: every call allowed by its function's role");
    expect(out.stdout).toContain("Not checked");
    expect(out.status).toBe(0);
  });

  it("passes on a variant with secrets, callbacks, apiGateway and conversationRetention", { timeout: 900_000 }, () => {
    const app = fileURLToPath(new URL("./fixtures/rehearsal-variant-app.ts", import.meta.url));
    const assembly = cachedAssembly({ app: nodeApp(app), inputs: [app] });
    const out = rehearse("--template", assembly.dir, "--secret", "/rehearsal/bearer=rehearsal-token", "--secret", "/rehearsal/callback=callback-token", "--token", "rehearsal-token");
    expect(out.stdout, out.stderr).toContain("rehearsal passed");
    expect(out.stdout).toContain("AWS::ApiGateway::RestApi");
    expect(out.status).toBe(0);
  });

  it("fails, naming the function, the action and the resource, when a role lacks a grant it uses", { timeout: 900_000 }, () => {
    const assembly = exampleAssembly(`${ROOT}examples/basic/agents.ts`);
    const out = rehearse("--template", assemblyWithout(assembly.dir, { action: "dynamodb:ConditionCheckItem" }));
    expect(out.status).toBe(1);
    expect(out.stdout).toContain("rehearsal FAILED");
    expect(out.stdout).toMatch(/AccessDenied: HarnessWorker\w+ may not dynamodb:ConditionCheckItem on arn:aws:dynamodb:[^ ]+:table\//);
  });
});
