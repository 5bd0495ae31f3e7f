import { constants } from "node:fs";
import { mkdir, open, readFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { AgentTool } from "../../src/session/agent-setup.ts";
import { workspacePath } from "./workspace-path.ts";

/** Largest text a read returns (the rest is cut, with a note saying so). */
const MAX_READ_CHARS = 64 * 1024;

const readParameters = {
  type: "object",
  properties: {
    path: { type: "string", description: "File path, relative to the workspace." },
    offset: { type: "integer", minimum: 1, description: "First line to return (1-based)." },
    limit: { type: "integer", minimum: 1, description: "Number of lines to return." },
  },
  required: ["path"],
  additionalProperties: false,
} as const;

const writeParameters = {
  type: "object",
  properties: {
    path: { type: "string", description: "File path, relative to the workspace." },
    content: { type: "string", description: "The whole new content of the file." },
  },
  required: ["path", "content"],
  additionalProperties: false,
} as const;

const editParameters = {
  type: "object",
  properties: {
    path: { type: "string", description: "File path, relative to the workspace." },
    oldText: { type: "string", minLength: 1, description: "Exact text to replace; must occur exactly once." },
    newText: { type: "string", description: "Replacement text." },
  },
  required: ["path", "oldText", "newText"],
  additionalProperties: false,
} as const;

const text = (t: string) => [{ type: "text" as const, text: t }];

/** `read`: a text file of the workspace, optionally a range of lines. */
export function readTool(root: string): AgentTool<typeof readParameters> {
  return {
    name: "read",
    label: "Read a file",
    description: "Reads a text file of the workspace (optionally lines offset..offset+limit-1).",
    parameters: readParameters,
    async execute(_callId, params) {
      const { path, offset, limit } = params as { path: string; offset?: number; limit?: number };
      const file = await workspacePath(root, path);
      let content = await readFile(file, "utf8");
      if (offset !== undefined || limit !== undefined) {
        const lines = content.split("\n");
        const from = (offset ?? 1) - 1;
        content = lines.slice(from, limit === undefined ? undefined : from + limit).join("\n");
      }
      const cut = content.length > MAX_READ_CHARS;
      if (cut) content = `${content.slice(0, MAX_READ_CHARS)}\n[… cut at ${MAX_READ_CHARS} characters; read a range with offset/limit]`;
      return { content: text(content), details: { path: path, cut } };
    },
  };
}

/** `write`: creates or replaces a file of the workspace (parent folders created). */
export function writeTool(root: string): AgentTool<typeof writeParameters> {
  return {
    name: "write",
    label: "Write a file",
    description: "Creates or overwrites a file of the workspace with the given content.",
    parameters: writeParameters,
    async execute(_callId, params) {
      const { path, content } = params as { path: string; content: string };
      const file = await workspacePath(root, path);
      await mkdir(dirname(file), { recursive: true });
      await writeNoFollow(file, content);
      const bytes = Buffer.byteLength(content);
      return { content: text(`wrote ${bytes} bytes to ${path}`), details: { path: path, bytes } };
    },
  };
}

/** `edit`: replaces one exact, unique occurrence of a text in a file of the workspace. */
export function editTool(root: string): AgentTool<typeof editParameters> {
  return {
    name: "edit",
    label: "Edit a file",
    description: "Replaces oldText (which must occur exactly once) with newText in a file of the workspace.",
    parameters: editParameters,
    async execute(_callId, params) {
      const { path, oldText, newText } = params as { path: string; oldText: string; newText: string };
      const file = await workspacePath(root, path);
      const before = await readFile(file, "utf8");
      const at = before.indexOf(oldText);
      if (at < 0) throw new Error(`oldText does not occur in ${path}`);
      if (before.indexOf(oldText, at + oldText.length) >= 0) throw new Error(`oldText occurs more than once in ${path}: give more context`);
      await writeNoFollow(file, before.slice(0, at) + newText + before.slice(at + oldText.length));
      return { content: text(`edited ${path}`), details: { path: path } };
    },
  };
}

/** Writes without following a symlink put in place after the path was checked. */
async function writeNoFollow(file: string, content: string): Promise<void> {
  const handle = await open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o644);
  try {
    await handle.writeFile(content, "utf8");
  } finally {
    await handle.close();
  }
}
