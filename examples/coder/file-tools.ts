import { constants } from "node:fs";
import { type FileHandle, mkdir, open } from "node:fs/promises";
import { dirname } from "node:path";
import type { AgentTool } from "../../src/agent/agent-setup.ts";
import { defineTool } from "../../src/agent/define-tool.ts";
import * as schema from "../../src/agent/tool-schema.ts";
import { workspacePath } from "./workspace-path.ts";

/** Largest text a read returns (the rest is cut, with a note saying so). */
const MAX_READ_CHARS = 64 * 1024;

/** Most bytes a read takes from a file (its lines are counted within them); larger files are read in part. */
export const MAX_READ_BYTES = 4 * 1024 * 1024;

/** Largest file `edit` rewrites. */
export const MAX_EDIT_BYTES = 4 * 1024 * 1024;

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
      const handle = await openRegularFile(path, file, constants.O_RDONLY);
      let bytes: Buffer;
      let size: number;
      try {
        size = (await handle.stat()).size;
        bytes = await readAtMost(handle, MAX_READ_BYTES);
      } finally {
        await handle.close();
      }
      const partial = size > bytes.length;
      let content = bytes.toString("utf8");
      if (offset !== undefined || limit !== undefined) {
        const lines = content.split("\n");
        const from = (offset ?? 1) - 1;
        content = lines.slice(from, limit === undefined ? undefined : from + limit).join("\n");
      }
      const cut = content.length > MAX_READ_CHARS;
      if (cut) content = `${content.slice(0, MAX_READ_CHARS)}\n[… cut at ${MAX_READ_CHARS} characters; read a range with offset/limit]`;
      if (partial) content += `\n[the file is ${size} bytes: only its first ${bytes.length} were read; use bash (head, tail, sed -n) for the rest]`;
      return { content: text(content), details: { path, cut, bytesRead: bytes.length, size } };
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
      await writeNoFollow(path, file, content);
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
      const handle = await openRegularFile(path, file, constants.O_RDONLY);
      let before: string;
      try {
        const { size } = await handle.stat();
        if (size > MAX_EDIT_BYTES) throw new Error(`${path} is ${size} bytes: edit rewrites files of at most ${MAX_EDIT_BYTES} bytes`);
        before = (await readAtMost(handle, MAX_EDIT_BYTES)).toString("utf8");
      } finally {
        await handle.close();
      }
      const at = before.indexOf(oldText);
      if (at < 0) throw new Error(`oldText does not occur in ${path}`);
      if (before.indexOf(oldText, at + oldText.length) >= 0) throw new Error(`oldText occurs more than once in ${path}: give more context`);
      await writeNoFollow(path, file, before.slice(0, at) + newText + before.slice(at + oldText.length));
      return { content: text(`edited ${path}`), details: { path } };
    },
  });
}

/**
 * Opens a checked path for a file tool, refusing what is not one ordinary file of the workspace:
 * - `O_NOFOLLOW`: a symlink put in place after the path was checked is not followed;
 * - `O_NONBLOCK`: opening a FIFO or a device never waits (a blocked open holds one of libuv's
 *   four file threads, and four of them stalled every other session's file tools);
 * - only a regular file is used: a FIFO, device, socket or folder is refused;
 * - a file with more than one hard link is refused: a hard link made inside the workspace to a file
 *   outside it passes every path check.
 */
async function openRegularFile(path: string, file: string, flags: number, mode?: number): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(file, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK, mode);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ELOOP") throw new Error(`${path} is a symlink: refused`);
    if (code === "ENXIO") throw new Error(`${path} is not a regular file (a FIFO or socket): refused`);
    throw err;
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new Error(`${path} is not a regular file (${kindOf(stat)}): refused`);
    if (stat.nlink > 1) throw new Error(`${path} has ${stat.nlink} hard links: refused (a hard link can lead out of the workspace)`);
    return handle;
  } catch (err) {
    await handle.close();
    throw err;
  }
}

function kindOf(stat: { isDirectory(): boolean; isFIFO(): boolean; isSocket(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean }): string {
  if (stat.isDirectory()) return "a folder";
  if (stat.isFIFO()) return "a FIFO";
  if (stat.isSocket()) return "a socket";
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return "a device";
  return "not a file";
}

/** The first `max` bytes of an open file (fewer when it is shorter). */
async function readAtMost(handle: FileHandle, max: number): Promise<Buffer> {
  const { size } = await handle.stat();
  const buffer = Buffer.alloc(Math.min(size, max));
  let filled = 0;
  while (filled < buffer.length) {
    const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buffer.subarray(0, filled);
}

/**
 * Writes a checked path without following a symlink put in place since, and without truncating
 * anything before the file is known to be the workspace's own (a regular file, one link).
 */
async function writeNoFollow(path: string, file: string, content: string): Promise<void> {
  const handle = await openRegularFile(path, file, constants.O_WRONLY | constants.O_CREAT, 0o644);
  try {
    await handle.truncate(0);
    await handle.writeFile(content, "utf8");
  } finally {
    await handle.close();
  }
}
