/** Approvals through MCP elicitation (ADR 0051): ids any instance can decode, and decisions from answers. */
import { describe, expect, it } from "vitest";
import { approvalElicitation, approvalOfRequestId, approvalRequestId, decisionOfElicitation } from "../../../src/http/mcp-approvals.ts";

describe("approval request ids", () => {
  it("name the submission and the call, and decode back", () => {
    const id = approvalRequestId("01JSUB", "refund-0-0");
    expect(approvalOfRequestId(id)).toEqual({ submissionId: "01JSUB", callId: "refund-0-0" });
  });
  it("are not read from ids that are not ours", () => {
    for (const id of [1, "1", "resolute-harness/approval:", "resolute-harness/approval:[1,2]", 'resolute-harness/approval:["a"]', null]) {
      expect(approvalOfRequestId(id)).toBeUndefined();
    }
  });
});

describe("approvalElicitation", () => {
  it("is a form asking a boolean, tied to the task", () => {
    const request = approvalElicitation({ submissionId: "01JSUB", callId: "c1", toolName: "refund", args: { amount: 240 } });
    expect(request.method).toBe("elicitation/create");
    expect(request.params.message).toBe('The agent asks to run refund({"amount":240}). Approve?');
    expect(request.params.requestedSchema).toMatchObject({ required: ["approved"] });
    expect(request.params._meta).toEqual({ "io.modelcontextprotocol/related-task": { taskId: "01JSUB" } });
  });
});

describe("decisionOfElicitation", () => {
  it("accept carries the decision, decline denies, cancel and anything else decide nothing", () => {
    expect(decisionOfElicitation({ action: "accept", content: { approved: true } })).toEqual({ approved: true });
    expect(decisionOfElicitation({ action: "accept", content: { approved: false, reason: "too much" } })).toEqual({ approved: false, reason: "too much" });
    expect(decisionOfElicitation({ action: "decline" })).toEqual({ approved: false, reason: "declined through MCP elicitation" });
    expect(decisionOfElicitation({ action: "cancel" })).toBeUndefined();
    expect(decisionOfElicitation({ action: "accept", content: { approved: "yes" } })).toBeUndefined();
    expect(decisionOfElicitation(null)).toBeUndefined();
  });
});
