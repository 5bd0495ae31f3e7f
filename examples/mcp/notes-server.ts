/**
 * The example's MCP server: a notebook, over stdio, built with the official MCP SDK (any MCP
 * server would do: the agent only knows it by its command). The harness starts it beside the
 * worker at each attempt. Notes live in NOTES_FILE (one JSON array), so they outlast the process.
 *
 * Tools: `add_note {text}`, `list_notes {}`, `clear_notes {}`.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";

const file = process.env.NOTES_FILE ?? "notes.json";
const read = (): string[] => (existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as string[]) : []);
const text = (t: string): CallToolResult => ({ content: [{ type: "text", text: t }] });

const server = new Server({ name: "notes", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    { name: "add_note", description: "Saves a note.", inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } },
    { name: "list_notes", description: "Lists the saved notes.", inputSchema: { type: "object", properties: {} } },
    { name: "clear_notes", description: "Deletes every note.", inputSchema: { type: "object", properties: {} } },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async ({ params }) => {
  const notes = read();
  switch (params.name) {
    case "add_note":
      notes.push(String(params.arguments?.text ?? ""));
      writeFileSync(file, JSON.stringify(notes));
      return text(`saved note ${notes.length}: ${notes.at(-1)}`);
    case "list_notes":
      return text(notes.length === 0 ? "no notes" : notes.map((n, i) => `${i + 1}. ${n}`).join("; "));
    case "clear_notes":
      writeFileSync(file, "[]");
      return text(`deleted ${notes.length} note(s)`);
    default:
      return { content: [{ type: "text", text: `no tool ${params.name}` }], isError: true };
  }
});
await server.connect(new StdioServerTransport());
