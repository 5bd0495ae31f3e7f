/**
 * The construct's `callbacks` (issue 22, ADR 0025): the callback route behind a bearer token of
 * its own, for third parties. The token reaches the http function alone, as a reference; with
 * `apiGateway` the API opens `POST /callbacks/{callbackId}` (and nothing else) without its
 * authorization; an `AWS_IAM` function URL, which a third party cannot pass, is refused.
 */
import type { Stack } from "aws-cdk-lib";
import { FunctionUrlAuthType } from "aws-cdk-lib/aws-lambda";
import { Secret } from "aws-cdk-lib/aws-secretsmanager";
import nag from "cdk-nag";
import { describe, expect, it } from "vitest";
import type { HarnessProps } from "../../../src/cdk/harness.ts";
import { HARNESS_ENV, HARNESS_FUNCTION_ROLES, type HarnessFunctionRole } from "../../../src/lambda/env.ts";
import { envOf, synthHarness, type Synth } from "../../support/cdk-synth.ts";

const synth = (props: (stack: Stack) => Partial<HarnessProps>): Synth => synthHarness(props, { env: true });

/** The names of the secrets a function reads at cold start. */
function secretNames(s: Synth, role: HarnessFunctionRole): string[] {
  const raw = envOf(s, role)[HARNESS_ENV.secrets];
  if (raw === undefined) return [];
  return [...JSON.stringify(s.stack.resolve(raw)).matchAll(/\\"([A-Z_]+)\\":\{/g)].map((m) => m[1]!).sort();
}

/** cdk-nag's findings on the harness's resources (the test's own secret is not the harness's). */
function nagViolations(stack: Stack): string[] {
  return new nag.AwsSolutionsChecks()
    .validateScope(stack)
    .violations.map((v) => `${v.ruleName} at ${v.violatingResources.map((r) => r.constructPath).join(", ")}`)
    .filter((line) => line.includes("/Harness/"));
}

const methods = (s: Synth) =>
  Object.values(s.template.findResources("AWS::ApiGateway::Method")).map((m) => m.Properties as { HttpMethod: string; AuthorizationType: string; ResourceId: unknown });
const resources = (s: Synth) => Object.entries(s.template.findResources("AWS::ApiGateway::Resource")).map(([id, r]) => ({ id, path: r.Properties.PathPart as string }));

describe("Harness: callbacks behind their own bearer token", () => {
  it("with apiGateway: only POST /callbacks/{callbackId} is open at the API, every other method keeps IAM; the token goes to the http function alone; cdk-nag passes", { timeout: 120_000 }, () => {
    const s = synth((stack) => ({ apiGateway: true, callbacks: { bearerToken: { secret: new Secret(stack, "CallbackToken") } } }));
    const callbackResource = resources(s).find((r) => r.path === "{callbackId}")!;
    expect(callbackResource).toBeDefined();
    expect(resources(s).map((r) => r.path).sort()).toEqual(["callbacks", "{callbackId}", "{proxy+}"]);
    const open = methods(s).filter((m) => m.AuthorizationType === "NONE");
    expect(open).toHaveLength(1);
    expect(open[0]).toMatchObject({ HttpMethod: "POST", ResourceId: { Ref: callbackResource.id } });
    expect(methods(s).filter((m) => m.AuthorizationType !== "NONE").every((m) => m.AuthorizationType === "AWS_IAM" && m.HttpMethod === "ANY")).toBe(true);
    expect(secretNames(s, "http")).toEqual(["HARNESS_CALLBACK_TOKEN"]);
    for (const role of HARNESS_FUNCTION_ROLES.filter((r) => r !== "http")) expect(secretNames(s, role), role).toEqual([]);
    expect(nagViolations(s.stack)).toEqual([]);
  });

  it("without the option nothing is open at the API", () => {
    const s = synth(() => ({ apiGateway: true }));
    expect(methods(s).filter((m) => m.AuthorizationType === "NONE")).toEqual([]);
    expect(resources(s).map((r) => r.path)).toEqual(["{proxy+}"]);
  });

  it("with urlAuthType NONE: both tokens go to the http function; the URL is unauthenticated and the app checks them", () => {
    const s = synth(() => ({
      urlAuthType: FunctionUrlAuthType.NONE,
      secrets: { HARNESS_BEARER_TOKEN: { parameterName: "/harness/api-token" } },
      callbacks: { bearerToken: { parameterName: "/harness/callback-token" } },
    }));
    expect(secretNames(s, "http")).toEqual(["HARNESS_BEARER_TOKEN", "HARNESS_CALLBACK_TOKEN"]);
    expect(JSON.stringify(s.stack.resolve(envOf(s, "http")[HARNESS_ENV.secrets]))).toContain("/harness/callback-token");
  });

  it("refuses an AWS_IAM function URL (a third party cannot sign) and the token given twice", () => {
    expect(() => synth(() => ({ callbacks: { bearerToken: { parameterName: "/t" } } }))).toThrow(/callbacks\.bearerToken needs a front door .* An AWS_IAM function URL admits only signed requests/);
    expect(() =>
      synth(() => ({
        urlAuthType: FunctionUrlAuthType.NONE,
        secrets: { HARNESS_BEARER_TOKEN: { parameterName: "/a" }, HARNESS_CALLBACK_TOKEN: { parameterName: "/b" } },
        callbacks: { bearerToken: { parameterName: "/t" } },
      })),
    ).toThrow(/the callback token is given twice/);
  });
});
