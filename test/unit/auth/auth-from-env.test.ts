import { describe, expect, it } from "vitest";
import { authFromEnv } from "../../../src/auth/auth-from-env.ts";
import { OPERATOR_PRINCIPAL } from "../../../src/protocol/principal.ts";

const req = (token?: string) => new Request("http://h.test/", token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });

describe("authFromEnv", () => {
  it("is off with none of the variables set", () => {
    expect(authFromEnv({})).toBeUndefined();
    expect(authFromEnv({ HARNESS_BEARER_TOKEN: " , " })).toBeUndefined();
  });

  it("HARNESS_BEARER_TOKEN: its holders are the operator", async () => {
    const auth = authFromEnv({ HARNESS_BEARER_TOKEN: "one, two" })!;
    expect(await auth.authenticate(req("two"))).toBe(OPERATOR_PRINCIPAL);
    expect(await auth.authenticate(req("three"))).toBeNull();
    expect(auth.describe).toEqual(["operator token"]);
  });

  it("AUTH_ISSUER needs AUTH_AUDIENCE, and the other AUTH_ variables need the issuer", () => {
    expect(() => authFromEnv({ AUTH_ISSUER: "https://issuer.example.com" })).toThrow(/AUTH_AUDIENCE/);
    expect(() => authFromEnv({ AUTH_AUDIENCE: "app" })).toThrow(/AUTH_ISSUER/);
    expect(() => authFromEnv({ AUTH_OWNER_CLAIM: "tenant" })).toThrow(/AUTH_ISSUER/);
    expect(() => authFromEnv({ AUTH_ISSUER: "not a url", AUTH_AUDIENCE: "app" })).toThrow(/AUTH_ISSUER/);
  });

  it("AUTH_OWNER_CLAIM names the instance a user owns (default sub: the user's id)", () => {
    const tenant = authFromEnv({ AUTH_ISSUER: "https://issuer.example.com", AUTH_AUDIENCE: "app", AUTH_OWNER_CLAIM: "tenant" })!;
    const target = { kind: "session", agent: "a", instance: "acme" } as const;
    expect(tenant.authorize({ id: "alice", claims: { tenant: "acme" } }, "dispatch", target)).toBe(true);
    expect(tenant.authorize({ id: "acme" }, "dispatch", target)).toBe(false);
    const bySub = authFromEnv({ AUTH_ISSUER: "https://issuer.example.com", AUTH_AUDIENCE: "app" })!;
    expect(bySub.authorize({ id: "acme" }, "dispatch", target)).toBe(true);
    expect(bySub.describe).toEqual(["JWT from https://issuer.example.com"]);
  });

  it("AUTH_ISSUER names the authorization server MCP's protected-resource metadata publishes; an operator token alone names none", () => {
    expect(authFromEnv({ AUTH_ISSUER: "https://issuer.example.com", AUTH_AUDIENCE: "app" })!.authorizationServers).toEqual(["https://issuer.example.com"]);
    expect(authFromEnv({ HARNESS_BEARER_TOKEN: "t" })!.authorizationServers).toBeUndefined();
  });
});
