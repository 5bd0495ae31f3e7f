/** `mcpTools` (issue 36 part 1): the options it refuses, stdio refused on Lambda, and how a toolset counts as a wait. */
import { afterEach, describe, expect, it } from "vitest";
import { longestToolWaitMs, validateAgentSetup, DEFAULT_APPROVAL_TIMEOUT_MS } from "../../../src/agent/agent-setup.ts";
import { approvalOf, isMcpToolset, keepsTool, mcpTools, McpToolsError, type McpToolsOptions } from "../../../src/agent/mcp-tools.ts";
import { localModel } from "../../../src/agent/local-model.ts";

const lambdaName = process.env.AWS_LAMBDA_FUNCTION_NAME;
afterEach(() => {
  if (lambdaName === undefined) delete process.env.AWS_LAMBDA_FUNCTION_NAME;
  else process.env.AWS_LAMBDA_FUNCTION_NAME = lambdaName;
});

function refusal(options: unknown): McpToolsError {
  try {
    mcpTools(options as McpToolsOptions);
  } catch (err) {
    if (err instanceof McpToolsError) return err;
    throw err;
  }
  throw new Error("accepted");
}

describe("mcpTools", () => {
  it("makes a toolset of a URL or a command, labelled without the URL's query or credentials", () => {
    const http = mcpTools({ url: "https://user:secret@mcp.example.com/mcp?token=abc", headers: { authorization: "Bearer x" } });
    expect(isMcpToolset(http)).toBe(true);
    expect(http.label).toBe("https://mcp.example.com/mcp");
    const stdio = mcpTools({ command: "node", args: ["server.js", "--stdio"] });
    expect(stdio.label).toBe("node server.js --stdio");
    expect(isMcpToolset({ label: "x", options: {} })).toBe(false);
  });

  it.each([
    [{}, "give either url (streamable HTTP) or command (stdio)"],
    [{ url: "http://a/mcp", command: "node" }, "not both or neither"],
    [{ url: "not a url" }, "url is not a URL"],
    [{ url: "file:///tmp/x" }, "url must be http: or https:"],
    [{ url: "http://a/mcp", headers: { a: 1 } }, "headers must be an object of strings"],
    [{ command: "" }, "command must be a non-empty string"],
    [{ command: "node", args: "x" }, "args must be an array of strings"],
    [{ command: "node", env: { A: 1 } }, "env must be an object of strings"],
    [{ command: "node", include: "echo" }, "include must be an array of tool names"],
    [{ command: "node", exclude: [""] }, "exclude must be an array of tool names"],
    [{ command: "node", prefix: 3 }, "prefix must be a string"],
    [{ command: "node", needsApproval: "echo" }, "needsApproval must be a boolean, an array of tool names or a function"],
    [{ command: "node", connectTimeoutMs: -1 }, "connectTimeoutMs must be a finite number >= 0"],
  ])("refuses %j: %s", (options, message) => {
    const err = refusal(options);
    expect(err.code).toBe("invalid_mcp_options");
    expect(err.message).toContain(message);
  });

  it("refuses a stdio server in a Lambda function, naming the way out (a URL); an HTTP one is fine there", () => {
    process.env.AWS_LAMBDA_FUNCTION_NAME = "my-stack-worker";
    const err = refusal({ command: "npx", args: ["some-server"] });
    expect(err.code).toBe("mcp_stdio_on_lambda");
    expect(err.message).toContain("a stdio MCP server (npx some-server) cannot run in a Lambda function");
    expect(err.message).toContain("give mcpTools its url");
    expect(isMcpToolset(mcpTools({ url: "https://mcp.example.com/mcp" }))).toBe(true);
  });

  it("include, then exclude, by the server's names; needsApproval by name, flag or function", () => {
    expect(["a", "b", "c"].filter((n) => keepsTool({ include: ["a", "b"], exclude: ["b"] }, n))).toEqual(["a"]);
    expect(["a", "b"].filter((n) => keepsTool({}, n))).toEqual(["a", "b"]);
    expect(approvalOf({ needsApproval: ["write"] }, "write")).toBe(true);
    expect(approvalOf({ needsApproval: ["write"] }, "read")).toBe(false);
    expect(approvalOf({ needsApproval: true }, "read")).toBe(true);
    const decide = () => true;
    expect(approvalOf({ needsApproval: decide }, "read")).toBe(decide);
    expect(approvalOf({}, "read")).toBeUndefined();
  });
});

describe("a toolset in a setup", () => {
  it("validates beside local tools, and one that may ask for approval counts as a wait", () => {
    const setup = { ...localModel(), tools: [mcpTools({ command: "node", needsApproval: ["x"], approvalTimeoutMs: 5_000 })] };
    expect(() => validateAgentSetup(setup)).not.toThrow();
    expect(longestToolWaitMs(setup)).toBe(5_000);
    expect(longestToolWaitMs({ tools: [mcpTools({ command: "node", needsApproval: true })] })).toBe(DEFAULT_APPROVAL_TIMEOUT_MS);
    expect(longestToolWaitMs({ tools: [mcpTools({ command: "node", needsApproval: [] })] })).toBe(0);
    expect(longestToolWaitMs({ tools: [mcpTools({ command: "node" })] })).toBe(0);
  });
});
