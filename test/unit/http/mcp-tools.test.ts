/** Agents as MCP tools (ADR 0051): descriptors, arguments, results. */
import { describe, expect, it } from "vitest";
import { agentTools, outputSchemaOf, replyTextOf, settledToolResult, toolArguments } from "../../../src/http/mcp-tools.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";

describe("agentTools", () => {
  it("gives a names-only agent a generic description and no output schema", () => {
    const [tool] = agentTools([{ name: "helper" }]);
    expect(tool!.description).toBe("The helper agent: send it a message and get its reply.");
    expect(tool!.outputSchema).toBeUndefined();
  });
  it("wraps a result schema that is not an object's as `result`", () => {
    expect(outputSchemaOf({ type: "array", items: { type: "string" } })).toEqual({
      type: "object",
      properties: { result: { type: "array", items: { type: "string" } } },
      required: ["result"],
    });
    expect(outputSchemaOf({ type: "object" })).toEqual({ type: "object" });
    expect(outputSchemaOf(undefined)).toBeUndefined();
  });
});

describe("toolArguments", () => {
  it("takes a message and optional instance and session; refuses other shapes in words", () => {
    expect(toolArguments({ message: "hi", instance: "a", session: "" })).toEqual({ message: "hi", instance: "a" });
    expect(toolArguments({ message: "" })).toBe("message must be a non-empty string");
    expect(toolArguments({ message: "hi", instance: 3 })).toBe("instance must be a string");
    expect(toolArguments([])).toBe("arguments must be an object with a message");
  });
});

describe("settledToolResult", () => {
  it("a succeeded submission: its reply text, and structured content as the output schema says", () => {
    const schema = { type: "array" };
    expect(settledToolResult("s1", { status: "succeeded", result: ["a"] }, "", schema)).toEqual({
      content: [{ type: "text", text: '["a"]' }],
      structuredContent: { result: ["a"] },
      _meta: { "resolute-harness/submissionId": "s1" },
    });
    expect(settledToolResult("s1", { status: "succeeded", result: { a: 1 } }, "ok", { type: "object" }).structuredContent).toEqual({ a: 1 });
    expect(settledToolResult("s1", { status: "succeeded" }, "hello", undefined).structuredContent).toBeUndefined();
  });
  it("a failed submission is an error result naming its code", () => {
    const result = settledToolResult("s1", { status: "failed", error: "boom", errorCode: "timeout_exceeded" }, "", undefined);
    expect(result.isError).toBe(true);
    expect(result.content[0]!.text).toBe("submission s1 failed (timeout_exceeded): boom");
  });
});

describe("replyTextOf", () => {
  it("is the text of the submission's last completed message that has text", () => {
    const completed = (id: string, submissionId: string, text: string) =>
      ({ id, kind: "assistant_message_completed", submissionId, conversationId: "c", session: "default", time: "", payload: { message: { role: "assistant", type: "message", body: { content: text ? [{ type: "text", text }] : [{ type: "toolCall" }] } } } }) as unknown as ConversationRecord;
    const records = [completed("1", "s1", "first"), completed("2", "s1", "second"), completed("3", "s1", ""), completed("4", "s2", "other")];
    expect(replyTextOf(records, "s1")).toBe("second");
    expect(replyTextOf(records, "s3")).toBe("");
  });
});
