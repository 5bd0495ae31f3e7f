/**
 * Agents for the MCP tool tests on the local cloud (issue 36 part 1): the keyless model with the
 * fixture MCP server's tools over streamable HTTP (`MCP_FIXTURE_URL`, a process the test runs),
 * and one that declares a stdio server, which a Lambda function refuses.
 */
import type { AgentDefinition } from "../../../src/agent/agent-definition.ts";
import { localModel } from "../../../src/agent/local-model.ts";
import { mcpTools } from "../../../src/mcp/index.ts";

export const agents: Record<string, AgentDefinition> = {
  remote: {
    description: "The keyless model with the fixture MCP server's tools.",
    initialize: () => ({ ...localModel(), tools: [mcpTools({ url: process.env.MCP_FIXTURE_URL!, exclude: ["slow"] })] }),
  },
  stdio: {
    description: "Declares a stdio MCP server: refused in a Lambda function.",
    initialize: () => ({ ...localModel(), tools: [mcpTools({ command: process.execPath, args: ["server.js"] })] }),
  },
};
