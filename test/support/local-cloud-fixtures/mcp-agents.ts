/**
 * Agents for the MCP tool tests on the local cloud (issue 36 part 1): the keyless model with the
 * fixture MCP server's tools over streamable HTTP (`MCP_FIXTURE_URL`, a process the test runs),
 * the same server at `MCP_DOWN_URL` (not listening when the test starts: its attempts fail and
 * are retried until it does), and one that declares a stdio server, which a Lambda function refuses.
 */
import type { AgentDefinition } from "../../../src/agent/agent-definition.ts";
import { localModel } from "../../../src/agent/local-model.ts";
import { mcpTools } from "../../../src/mcp/index.ts";

export const agents: Record<string, AgentDefinition> = {
  remote: {
    description: "The keyless model with the fixture MCP server's tools.",
    initialize: () => ({ ...localModel(), tools: [mcpTools({ url: process.env.MCP_FIXTURE_URL!, exclude: ["slow"] })] }),
  },
  later: {
    description: "The fixture MCP server at a port it listens on only later.",
    initialize: () => ({ ...localModel(), tools: [mcpTools({ url: process.env.MCP_DOWN_URL! })] }),
  },
  stdio: {
    description: "Declares a stdio MCP server: refused in a Lambda function.",
    initialize: () => ({ ...localModel(), tools: [mcpTools({ command: process.execPath, args: ["server.js"] })] }),
  },
};
