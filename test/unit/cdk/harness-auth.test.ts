/**
 * The construct's `auth` (issue 34, ADR 0045): users' JWTs verified by the http function (the
 * `AUTH_*` variables on it alone) behind a function URL with `authType: NONE`; with `apiGateway`
 * a Cognito user pools authorizer on every method but the preflights and the callback route;
 * what makes no sense refused at synth with `HarnessPropsInvalid`.
 */
import type { Stack } from "aws-cdk-lib";
import { CognitoUserPoolsAuthorizer } from "aws-cdk-lib/aws-apigateway";
import { UserPool, UserPoolClient } from "aws-cdk-lib/aws-cognito";
import { FunctionUrlAuthType } from "aws-cdk-lib/aws-lambda";
import nag from "cdk-nag";
import { describe, expect, it } from "vitest";
import type { HarnessProps } from "../../../src/cdk/harness.ts";
import { HarnessPropsInvalid } from "../../../src/cdk/harness-checks.ts";
import { HARNESS_ENV, HARNESS_FUNCTION_ROLES } from "../../../src/lambda/env.ts";
import { envOf, logicalIdOf, synthHarness, type Synth } from "../../support/cdk-synth.ts";

const AUTH_VARIABLES = ["AUTH_ISSUER", "AUTH_AUDIENCE", "AUTH_JWKS_URL", "AUTH_OWNER_CLAIM"];
const ISSUER = "https://issuer.example.com";
const JWT = { jwt: { issuer: ISSUER, audience: ["web-client", "cli-client"] } };
const POOL_ARN = "arn:aws:cognito-idp:eu-west-1:111122223333:userpool/eu-west-1_AbCdEf123";

const synth = (props: Partial<HarnessProps> | ((stack: Stack) => Partial<HarnessProps>)): Synth => synthHarness(props, { env: true });

/** What `f` throws (undefined when it does not). */
function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (err) {
    return err;
  }
  return undefined;
}

/** cdk-nag's findings on the harness's resources (a test's own user pool is not the harness's). */
function nagViolations(stack: Stack): string[] {
  return new nag.AwsSolutionsChecks()
    .validateScope(stack)
    .violations.map((v) => `${v.ruleName} at ${v.violatingResources.map((r) => r.constructPath).join(", ")}`)
    .filter((line) => line.includes("/Harness/"));
}

interface MethodProps {
  HttpMethod: string;
  AuthorizationType: string;
  AuthorizerId?: unknown;
  AuthorizationScopes?: string[];
  ResourceId: unknown;
}
const methods = (s: Synth) => Object.values(s.template.findResources("AWS::ApiGateway::Method")).map((m) => m.Properties as MethodProps);
const resourceIdOf = (s: Synth, path: string) =>
  Object.entries(s.template.findResources("AWS::ApiGateway::Resource")).find(([, r]) => r.Properties.PathPart === path)?.[0];

/** The auth variables each function receives. */
function authVariables(s: Synth): Record<string, string[]> {
  return Object.fromEntries(HARNESS_FUNCTION_ROLES.map((role) => [role, Object.keys(envOf(s, role)).filter((k) => AUTH_VARIABLES.includes(k)).sort()]));
}

describe("Harness auth: users' JWTs verified by the http function", () => {
  it("jwt behind the function URL: the AUTH_* variables on the http function alone, the URL's auth type NONE, cdk-nag clean", () => {
    const s = synth({ auth: { jwt: { ...JWT.jwt, jwksUrl: `${ISSUER}/keys`, ownerClaim: "tenant" } } });
    const http = envOf(s, "http");
    expect(http).toMatchObject({
      AUTH_ISSUER: ISSUER,
      AUTH_AUDIENCE: "web-client,cli-client",
      AUTH_JWKS_URL: `${ISSUER}/keys`,
      AUTH_OWNER_CLAIM: "tenant",
      [HARNESS_ENV.urlAuth]: "NONE",
    });
    expect(authVariables(s)).toEqual({ http: [...AUTH_VARIABLES].sort(), worker: [], dlq: [], sweeper: [] });
    s.template.hasResourceProperties("AWS::Lambda::Url", { AuthType: "NONE", InvokeMode: "RESPONSE_STREAM" });
    expect(nagViolations(s.stack)).toEqual([]);
  });

  it("leaves AUTH_JWKS_URL and AUTH_OWNER_CLAIM unset when not given (the issuer's discovery, and sub)", () => {
    const s = synth({ auth: { jwt: { issuer: ISSUER, audience: "web-client", ownerClaim: "sub" } } });
    expect(Object.keys(envOf(s, "http")).filter((k) => AUTH_VARIABLES.includes(k)).sort()).toEqual(["AUTH_AUDIENCE", "AUTH_ISSUER"]);
    expect(envOf(s, "http").AUTH_AUDIENCE).toBe("web-client");
  });

  it("cognito: the issuer is the pool's (https://cognito-idp.<region>.amazonaws.com/<pool id>), the audience its app clients' ids", () => {
    const imported = synth((stack) => ({
      auth: { cognito: { userPool: UserPool.fromUserPoolArn(stack, "Pool", POOL_ARN), clients: ["client-a", "client-b"] } },
    }));
    // amazonaws.com in the partition "aws" (the pool's own ARN gives region and id).
    expect(imported.stack.resolve(envOf(imported, "http").AUTH_ISSUER)).toEqual({
      "Fn::Join": ["", ["https://cognito-idp.eu-west-1.", { Ref: "AWS::URLSuffix" }, "/eu-west-1_AbCdEf123"]],
    });
    expect(envOf(imported, "http").AUTH_AUDIENCE).toBe("client-a,client-b");

    let client: UserPoolClient | undefined;
    let pool: UserPool | undefined;
    const made = synth((stack) => {
      pool = new UserPool(stack, "Users");
      client = pool.addClient("Web");
      return { auth: { cognito: { userPool: pool, clients: [client, "other-client"], ownerClaim: "custom:tenant" } } };
    });
    const env = made.stack.resolve(envOf(made, "http"));
    expect(env.AUTH_ISSUER).toEqual({ "Fn::Join": ["", ["https://", { "Fn::GetAtt": [logicalIdOf(made, pool!), "ProviderName"] }]] });
    expect(env.AUTH_AUDIENCE).toEqual({ "Fn::Join": ["", [{ Ref: logicalIdOf(made, client!) }, ",other-client"]] });
    expect(env.AUTH_OWNER_CLAIM).toBe("custom:tenant");
    expect(authVariables(made)).toMatchObject({ worker: [], dlq: [], sweeper: [] });
    made.template.hasResourceProperties("AWS::Lambda::Url", { AuthType: "NONE" });
    // No API, no authorizer: the app alone verifies.
    made.template.resourceCountIs("AWS::ApiGateway::Authorizer", 0);
    expect(nagViolations(made.stack)).toEqual([]);
  });

  it("is what lets urlAuthType NONE stand without HARNESS_BEARER_TOKEN (the app verifies JWTs), and an operator token may stand beside it", () => {
    synth({ urlAuthType: FunctionUrlAuthType.NONE, auth: JWT });
    synth({ apiGateway: true, urlAuthType: FunctionUrlAuthType.NONE, auth: JWT });
    // The variables given by hand (every function gets them then) count as the app verifying JWTs too.
    synth({ urlAuthType: FunctionUrlAuthType.NONE, environment: { AUTH_ISSUER: ISSUER, AUTH_AUDIENCE: "web-client" } });
    const both = synth({
      auth: JWT,
      secrets: { HARNESS_BEARER_TOKEN: { parameterName: "/harness/operator-token" } },
      callbacks: { bearerToken: { parameterName: "/harness/callback-token" } },
    });
    expect(JSON.stringify(both.stack.resolve(envOf(both, "http")[HARNESS_ENV.secrets]))).toMatch(/HARNESS_BEARER_TOKEN.*HARNESS_CALLBACK_TOKEN/);
    both.template.hasResourceProperties("AWS::Lambda::Url", { AuthType: "NONE" });
  });
});

describe("Harness auth with apiGateway", () => {
  it("cognito: a Cognito user pools authorizer on every method but the CORS preflights and the callback route; the app still verifies; cdk-nag clean", () => {
    let pool: UserPool | undefined;
    const s = synth((stack) => {
      pool = new UserPool(stack, "Users");
      return {
        apiGateway: true,
        corsOrigins: ["https://app.example.com"],
        callbacks: { bearerToken: { parameterName: "/harness/callback-token" } },
        auth: { cognito: { userPool: pool, clients: [pool.addClient("Web")] } },
      };
    });
    s.template.resourceCountIs("AWS::ApiGateway::Authorizer", 1);
    s.template.hasResourceProperties("AWS::ApiGateway::Authorizer", {
      Type: "COGNITO_USER_POOLS",
      IdentitySource: "method.request.header.Authorization",
      ProviderARNs: [{ "Fn::GetAtt": [logicalIdOf(s, pool!), "Arn"] }],
    });
    const authorizerId = Object.keys(s.template.findResources("AWS::ApiGateway::Authorizer"))[0]!;
    const all = methods(s);
    const callbackResource = resourceIdOf(s, "{callbackId}");
    const isCallback = (m: MethodProps) => m.HttpMethod === "POST" && JSON.stringify(m.ResourceId) === JSON.stringify({ Ref: callbackResource });
    const guarded = all.filter((m) => m.HttpMethod !== "OPTIONS" && !isCallback(m));
    expect(guarded.map((m) => m.HttpMethod)).toEqual(["ANY", "ANY"]);
    for (const m of guarded) {
      expect(m.AuthorizationType).toBe("COGNITO_USER_POOLS");
      expect(m.AuthorizerId).toEqual({ Ref: authorizerId });
      expect(m.AuthorizationScopes).toBeUndefined();
    }
    const open = all.filter((m) => !guarded.includes(m));
    expect(open.filter((m) => m.HttpMethod === "OPTIONS").length).toBeGreaterThanOrEqual(2);
    expect(open.filter(isCallback)).toHaveLength(1);
    for (const m of open) {
      expect(m.AuthorizationType).toBe("NONE");
      expect(m.AuthorizerId).toBeUndefined();
    }
    expect(s.harness.api?.authorizer).toBeInstanceOf(CognitoUserPoolsAuthorizer);
    // The app behind it still verifies every token and applies the policy.
    expect(envOf(s, "http")[HARNESS_ENV.urlAuth]).toBe("API_GATEWAY");
    expect(authVariables(s)).toEqual({ http: ["AUTH_AUDIENCE", "AUTH_ISSUER"], worker: [], dlq: [], sweeper: [] });
    expect(nagViolations(s.stack)).toEqual([]);
  });

  it("cognito with scopes: the guarded methods require them (clients send the access token), the preflights do not", () => {
    const s = synth((stack) => ({
      apiGateway: true,
      corsOrigins: ["https://app.example.com"],
      auth: { cognito: { userPool: UserPool.fromUserPoolArn(stack, "Pool", POOL_ARN), clients: ["client-a"], scopes: ["harness/agents"] } },
    }));
    for (const m of methods(s)) {
      if (m.HttpMethod === "OPTIONS") expect(m.AuthorizationScopes).toBeUndefined();
      else expect(m.AuthorizationScopes).toEqual(["harness/agents"]);
    }
    expect(nagViolations(s.stack)).toEqual([]);
  });

  it("jwt: a REST API has no JWT authorizer, so no authorizer at the API and the app alone verifies; cdk-nag's APIG4/COG4 acknowledged with that reason", () => {
    const s = synth({ apiGateway: true, auth: JWT });
    s.template.resourceCountIs("AWS::ApiGateway::Authorizer", 0);
    expect(methods(s).map((m) => m.AuthorizationType)).toEqual(["NONE", "NONE"]);
    expect(authVariables(s)).toEqual({ http: ["AUTH_AUDIENCE", "AUTH_ISSUER"], worker: [], dlq: [], sweeper: [] });
    expect(nagViolations(s.stack)).toEqual([]);
  });
});

describe("Harness auth: what makes no sense is refused at synth (HarnessPropsInvalid)", () => {
  const refusal = (props: Partial<HarnessProps> | ((stack: Stack) => Partial<HarnessProps>)) => {
    const err = thrown(() => synth(props));
    expect(err).toBeInstanceOf(HarnessPropsInvalid);
    return err as HarnessPropsInvalid;
  };

  it("refuses urlAuthType AWS_IAM given with auth, at the function URL and at the API (a browser holding a user's token cannot sign)", () => {
    expect(refusal({ auth: JWT, urlAuthType: FunctionUrlAuthType.AWS_IAM }).message).toMatch(/urlAuthType AWS_IAM .* function URL.* cannot sign/);
    expect(refusal({ auth: JWT, apiGateway: true, urlAuthType: FunctionUrlAuthType.AWS_IAM }).message).toMatch(/urlAuthType AWS_IAM .* the API/);
  });

  it("refuses an issuer or key set URL that is not https, loopback included, and what is not a URL", () => {
    for (const issuer of ["http://issuer.example.com", "http://localhost:8080", "http://127.0.0.1:9000/realms/x", "issuer.example.com", " https://issuer.example.com"]) {
      expect(refusal({ auth: { jwt: { issuer, audience: "a" } } }), issuer).toMatchObject({ prop: "auth.jwt.issuer" });
    }
    expect(refusal({ auth: { jwt: { issuer: ISSUER, audience: "a", jwksUrl: "http://issuer.example.com/keys" } } })).toMatchObject({
      prop: "auth.jwt.jwksUrl",
      message: expect.stringContaining("is not https"),
    });
  });

  it("refuses an empty audience, a blank one and one with a comma; a Cognito pool without app clients", () => {
    for (const audience of [[], "", "  ", ["a", ""], "a,b"]) {
      expect(refusal({ auth: { jwt: { issuer: ISSUER, audience } } }), JSON.stringify(audience)).toMatchObject({ prop: "auth.jwt.audience" });
    }
    expect(refusal((stack) => ({ auth: { cognito: { userPool: UserPool.fromUserPoolArn(stack, "Pool", POOL_ARN), clients: [] } } }))).toMatchObject({
      prop: "auth.cognito.clients",
      message: expect.stringContaining("no audience"),
    });
  });

  it("refuses neither or both of jwt and cognito, a blank ownerClaim, the AUTH_* variables also in environment", () => {
    expect(refusal({ auth: {} }).message).toContain("exactly one of `jwt`");
    expect(refusal((stack) => ({ auth: { ...JWT, cognito: { userPool: UserPool.fromUserPoolArn(stack, "Pool", POOL_ARN), clients: ["c"] } } })).message).toContain("exactly one");
    expect(refusal({ auth: { jwt: { ...JWT.jwt, ownerClaim: " " } } }).message).toContain("is not a claim name");
    expect(refusal({ auth: JWT, environment: { AUTH_OWNER_CLAIM: "tenant" } }).message).toContain("AUTH_OWNER_CLAIM given in `environment` too");
  });

  it("refuses Cognito scopes without apiGateway (nothing would require them), and a Cognito authorizer beside apiGateway.authorizer", () => {
    expect(
      refusal((stack) => ({ auth: { cognito: { userPool: UserPool.fromUserPoolArn(stack, "Pool", POOL_ARN), clients: ["c"], scopes: ["harness/agents"] } } })).message,
    ).toContain("need `apiGateway`");
    expect(
      refusal((stack) => {
        const userPool = UserPool.fromUserPoolArn(stack, "Pool", POOL_ARN);
        return {
          apiGateway: { authorizer: new CognitoUserPoolsAuthorizer(stack, "Mine", { cognitoUserPools: [userPool] }) },
          auth: { cognito: { userPool, clients: ["c"] } },
        };
      }).message,
    ).toContain("a method takes one");
  });
});

describe("Harness chatPage: the http function serves the chat page", () => {
  it("chatPage: HARNESS_CHAT_PAGE (the page's options as JSON) on the http function alone; without it, on none", { timeout: 240_000 }, () => {
    const signIn = { url: "https://example.auth.eu-west-1.amazoncognito.com/oauth2/authorize?response_type=token&client_id=web" };
    const s = synth({ auth: JWT, chatPage: { signIn, instanceClaim: "tenant", title: "Acme chat" } });
    for (const role of HARNESS_FUNCTION_ROLES) {
      const value = envOf(s, role)[HARNESS_ENV.chatPage];
      if (role === "http") expect(JSON.parse(value as string), role).toEqual({ signIn, instanceClaim: "tenant", title: "Acme chat" });
      else expect(value, role).toBeUndefined();
    }
    expect(envOf(synth({ auth: JWT, chatPage: true }), "http")[HARNESS_ENV.chatPage]).toBe("{}");
    expect(envOf(synth({ auth: JWT, chatPage: false }), "http")[HARNESS_ENV.chatPage]).toBeUndefined();
  });
});
