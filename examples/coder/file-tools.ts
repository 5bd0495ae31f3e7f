import { constants } from "node:fs";
import { mkdir, open, readFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { AgentTool } from "../../src/agent/agent-setup.ts";
import { defineTool } from "../../src/agent/define-tool.ts";
import * as schema from "../../src/agent/tool-schema.ts";
import { workspacePath } from "./workspace-path.ts";

/** Largest text a read returns (the rest is cut, with a note saying so). */
const MAX_READ_CHARS = 64 * 1024;

const pathParam = schema.str({ minLength: 1, description: "File path, relative to the workspace." });

const readParameters = schema.obj({
  path: pathParam,
  offset: schema.opt(schema.int({ minimum: 1, description: "First line to return (1-based)." })),
  limit: schema.opt(schema.int({ minimum: 1, description: "Number of lines to return." })),
});

const writeParameters = schema.obj({
  path: pathParam,
  content: schema.str({ description: "The whole new content of the file." }),
});

const editParameters = schema.obj({
  path: pathParam,
  oldText: schema.str({ minLength: 1, description: "Exact text to replace; must occur exactly once." }),
  newText: schema.str({ description: "Replacement text." }),
});

const text = (t: string) => [{ type: "text" as const, text: t }];

/** `read`: a text file of the workspace, optionally a range of lines. */
export function readTool(root: string): AgentTool<typeof readParameters> {
  return defineTool({
    name: "read",
    label: "Read a file",
    description: "Reads a text file of the workspace (optionally lines offset..offset+limit-1).",
    parameters: readParameters,
    async execute(_callId, { path, offset, limit }) {
      const file = await workspacePath(root, path);
      let content = await readFile(file, "utf8");
      if (offset !== undefined || limit !== undefined) {
        const lines = content.split("\n");
        const from = (offset ?? 1) - 1;
        content = lines.slice(from, limit === undefined ? undefined : from + limit).join("\n");
      }
      const cut = content.length > MAX_READ_CHARS;
      if (cut) content = `${content.slice(0, MAX_READ_CHARS)}\n[… cut at ${MAX_READ_CHARS} characters; read a range with offset/limit]`;
      return { content: text(content), details: { path, cut } };
    },
  });
}

/** `write`: creates or replaces a file of the workspace (parent folders created). */
export function writeTool(root: string): AgentTool<typeof writeParameters> {
  return defineTool({
    name: "write",
    label: "Write a file",
    description: "Creates or overwrites a file of the workspace with the given content.",
    parameters: writeParameters,
    async execute(_callId, { path, content }) {
      const file = await workspacePath(root, path);
      await mkdir(dirname(file), { recursive: true });
      await writeNoFollow(file, content);
      const bytes = Buffer.byteLength(content);
      return { content: text(`wrote ${bytes} bytes to ${path}`), details: { path, bytes } };
    },
  });
}

/** `edit`: replaces one exact, unique occurrence of a text in a file of the workspace. */
export function editTool(root: string): AgentTool<typeof editParameters> {
  return defineTool({
    name: "edit",
    label: "Edit a file",
    description: "Replaces oldText (which must occur exactly once) with newText in a file of the workspace.",
    parameters: editParameters,
    async execute(_callId, { path, oldText, newText }) {
      const file = await workspacePath(root, path);
      const before = await readFile(file, "utf8");
      const at = before.indexOf(oldText);
      if (at < 0) throw new Error(`oldText does not occur in ${path}`);
      if (before.indexOf(oldText, at + oldText.length) >= 0) throw new Error(`oldText occurs more than once in ${path}: give more context`);
      await writeNoFollow(file, before.slice(0, at) + newText + before.slice(at + oldText.length));
      return { content: text(`edited ${path}`), details: { path } };
    },
  });
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
