import { describe, expect, it } from "vitest";
import { ownerPolicy } from "../../../src/auth/owner-policy.ts";
import { ACCESS_ACTIONS, OPERATOR_PRINCIPAL, type AccessTarget } from "../../../src/protocol/principal.ts";

const at = (instance: string): AccessTarget => ({ kind: "session", agent: "assistant", instance });

describe("ownerPolicy", () => {
  it("lets a principal reach the instance named by its id, and no other, for every action", () => {
    const allow = ownerPolicy();
    for (const action of ACCESS_ACTIONS) {
      expect(allow({ id: "alice" }, action, at("alice")), action).toBe(true);
      expect(allow({ id: "alice" }, action, at("bob")), action).toBe(false);
    }
  });

  it("lets the operator reach every instance", () => {
    const allow = ownerPolicy();
    for (const action of ACCESS_ACTIONS) expect(allow(OPERATOR_PRINCIPAL, action, at("bob")), action).toBe(true);
  });

  it("with ownerClaim, owns the instance its claim names (a tenant shared by its users); a principal without the claim owns none", () => {
    const allow = ownerPolicy({ ownerClaim: "tenant" });
    expect(allow({ id: "alice", claims: { tenant: "acme" } }, "dispatch", at("acme"))).toBe(true);
    expect(allow({ id: "alice", claims: { tenant: "acme" } }, "dispatch", at("alice"))).toBe(false);
    expect(allow({ id: "acme" }, "dispatch", at("acme")), "no claim: owns nothing").toBe(false);
    expect(allow({ id: "x", claims: { tenant: 7 } }, "dispatch", at("7")), "a non-string claim owns nothing").toBe(false);
  });

  it("with decideRoles, a decision also needs one of the roles", () => {
    const allow = ownerPolicy({ decideRoles: ["approver"] });
    expect(allow({ id: "alice" }, "decide", at("alice"))).toBe(false);
    expect(allow({ id: "alice", roles: ["approver"] }, "decide", at("alice"))).toBe(true);
    expect(allow({ id: "alice", roles: ["approver"] }, "decide", at("bob"))).toBe(false);
    expect(allow({ id: "alice" }, "dispatch", at("alice"))).toBe(true);
  });

  it("attachments (ADR 0046): anyone signed in uploads; a digest is read by its uploader and the operator, no one else", () => {
    const allow = ownerPolicy({ ownerClaim: "tenant" });
    const digest = `sha256:${"a".repeat(64)}`;
    const alice = { id: "alice", claims: { tenant: "acme" } };
    expect(allow(alice, "uploadAttachment", { kind: "attachment" })).toBe(true);
    expect(allow(alice, "attachment", { kind: "attachment", digest, uploaded: true })).toBe(true);
    expect(allow(alice, "attachment", { kind: "attachment", digest, uploaded: false }), "another's upload, even of her tenant").toBe(false);
    expect(allow(alice, "attachment", { kind: "attachment", digest }), "not known to be hers").toBe(false);
    expect(allow(OPERATOR_PRINCIPAL, "attachment", { kind: "attachment", digest, uploaded: false })).toBe(true);
  });

  it("refuses an empty ownerClaim when built", () => {
    expect(() => ownerPolicy({ ownerClaim: "" })).toThrow(/ownerClaim/);
  });
});
