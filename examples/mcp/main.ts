/**
 * The MCP example (`npm run example -- mcp`): an agent that uses a local MCP server's tools
 * (ADR 0050), on http://127.0.0.1:8493. The server (notes-server.ts) runs over stdio, started by
 * the harness at each attempt; its tools are the agent's, prefixed `notes_`. See README.md for the
 * runbook. Environment: PORT (8493), HOST, DATA_DIR (./harness-data/mcp), LEASE_MS, LOG_LEVEL.
 */
import { mkdirSync } from "node:fs";
import { exampleSettings } from "../shared/settings.ts";
import { startExample } from "../shared/start-example.ts";
import { ASSISTANT, mcpAgents } from "./agents.ts";

const settings = exampleSettings("mcp", 8493);
mkdirSync(settings.dataDir, { recursive: true });

await startExample({
  settings,
  agents: mcpAgents(settings.dataDir),
  model: "local-echo (keyless) with a local MCP server's tools",
  tryLines: (base) => [
    `curl -s '${base}/agents/${ASSISTANT}/demo?wait=true' -d '{"kind":"user","body":"/notes_add_note {\\"text\\":\\"buy milk\\"}"}'`,
    `npm run harness -- tail ${ASSISTANT}/demo --url ${base}`,
    `(see examples/mcp/README.md for the rest)`,
  ],
});
