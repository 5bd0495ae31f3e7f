/** An MCP `tools/call` result as the harness's tool result (issue 36 part 1). */
import { expect, it } from "vitest";
import { toolResultOf } from "../../../src/drive/mcp-result.ts";

it("text and images pass; audio, resources and links become a line naming them; structured content is the data", () => {
  const result = toolResultOf({
    content: [
      { type: "text", text: "hello" },
      { type: "image", data: "aGk=", mimeType: "image/png" },
      { type: "audio", data: "aGVsbG8=", mimeType: "audio/wav" },
      { type: "resource", resource: { uri: "file:///a.txt", text: "inside" } },
      { type: "resource", resource: { uri: "file:///b.bin", mimeType: "application/octet-stream", blob: "AAEC" } },
      { type: "resource_link", uri: "file:///c", name: "c" },
    ],
    structuredContent: { sum: 5 },
  });
  expect(result).toEqual({
    content: [
      { type: "text", text: "hello" },
      { type: "image", data: "aGk=", mimeType: "image/png" },
      { type: "text", text: "[audio audio/wav, 5 bytes]" },
      { type: "text", text: "inside" },
      { type: "text", text: "[resource file:///b.bin (application/octet-stream), 3 bytes]" },
      { type: "text", text: "[resource link file:///c (c)]" },
    ],
    details: { structuredContent: { sum: 5 } },
  });
});

it("structured content alone is the text too; isError stays an error; the old toolResult shape reads", () => {
  expect(toolResultOf({ structuredContent: { sum: 5 } }).content).toEqual([{ type: "text", text: '{"sum":5}' }]);
  expect(toolResultOf({ content: [{ type: "text", text: "no" }], isError: true })).toEqual({ content: [{ type: "text", text: "no" }], details: {}, isError: true });
  expect(toolResultOf({ toolResult: 42 }).content).toEqual([{ type: "text", text: "42" }]);
});
