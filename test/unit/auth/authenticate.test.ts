import { describe, expect, it } from "vitest";
import { anyOf, bearerTokenAuthenticator, bearerTokenOf, checkedPrincipal } from "../../../src/auth/authenticate.ts";
import { OPERATOR_PRINCIPAL } from "../../../src/protocol/principal.ts";

const req = (authorization?: string) => new Request("http://h.test/", authorization === undefined ? {} : { headers: { authorization } });

describe("bearerTokenAuthenticator", () => {
  it("answers the operator for any of its tokens and null for anything else", async () => {
    const authenticate = bearerTokenAuthenticator({ token: ["old", "new"] });
    expect(await authenticate(req("Bearer new"))).toBe(OPERATOR_PRINCIPAL);
    expect(await authenticate(req("bearer old"))).toBe(OPERATOR_PRINCIPAL);
    for (const header of [undefined, "Bearer ne", "Bearer newer", "Basic bmV3", "Bearer", "Bearer new extra"]) {
      expect(await authenticate(req(header)), String(header)).toBeNull();
    }
  });

  it("a holder can be another principal; tokens must be non-empty", () => {
    const authenticate = bearerTokenAuthenticator({ token: "t", principal: { id: "ci" } });
    expect(authenticate(req("Bearer t"))).toEqual({ id: "ci" });
    expect(() => bearerTokenAuthenticator({ token: "" })).toThrow(/non-empty/);
    expect(() => bearerTokenAuthenticator({ token: [] })).toThrow(/at least one/);
  });
});

describe("anyOf", () => {
  it("answers the first principal found, in order, or null", async () => {
    const authenticate = anyOf(bearerTokenAuthenticator({ token: "op" }), () => ({ id: "alice" }));
    expect(await authenticate(req("Bearer op"))).toBe(OPERATOR_PRINCIPAL);
    expect(await authenticate(req("Bearer other"))).toEqual({ id: "alice" });
    expect(await anyOf(() => null)(req())).toBeNull();
  });
});

describe("bearerTokenOf / checkedPrincipal", () => {
  it("reads a bearer token and checks what an authenticator returns", () => {
    expect(bearerTokenOf(req("Bearer a.b.c"))).toBe("a.b.c");
    expect(bearerTokenOf(req("Bearer a b"))).toBeUndefined();
    expect(checkedPrincipal(null)).toBeNull();
    expect(checkedPrincipal({ id: "x", roles: ["r"] })).toEqual({ id: "x", roles: ["r"] });
    expect(() => checkedPrincipal({ id: "" })).toThrow(/principal/);
    expect(() => checkedPrincipal({ id: "x", roles: "admin" })).toThrow(/roles/);
  });
});
