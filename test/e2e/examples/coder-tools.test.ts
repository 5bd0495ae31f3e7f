import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bashTool } from "../../../examples/coder/bash-tool.ts";
import { editTool, readTool, writeTool } from "../../../examples/coder/file-tools.ts";
import { PathOutsideWorkspace, workspacePath } from "../../../examples/coder/workspace-path.ts";

/** The coder example's tools: confined to the workspace (file tools), streaming (bash). */

let base: string;
let root: string;
let outside: string;
beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), "harness-coder-tools-"));
  root = join(base, "workspace");
  outside = join(base, "outside");
  mkdirSync(join(root, "src"), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, "secret.txt"), "outside secret");
  writeFileSync(join(root, "src", "a.txt"), "alpha\nbeta\ngamma\n");
  symlinkSync(join(outside, "secret.txt"), join(root, "leak.txt")); // a file link out
  symlinkSync(outside, join(root, "out")); // a folder link out
  symlinkSync(join(outside, "not-yet.txt"), join(root, "dangling.txt")); // a link to a file that does not exist
  symlinkSync(join(root, "src"), join(root, "src-link")); // a link that stays inside
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

const call = <T extends { execute: (...args: never[]) => unknown }>(tool: T, params: unknown) =>
  (tool.execute as (id: string, p: unknown, s?: AbortSignal, u?: (r: unknown) => void) => Promise<{ content: { text: string }[]; details: unknown; isError?: boolean }>)(
    "call_1",
    params,
  );

describe("workspacePath", () => {
  it("resolves paths inside, through links that stay inside, and new files", async () => {
    expect(await workspacePath(root, "src/a.txt")).toMatch(/workspace\/src\/a\.txt$/);
    expect(await workspacePath(root, "./src/../src/a.txt")).toMatch(/workspace\/src\/a\.txt$/);
    expect(await workspacePath(root, "src-link/a.txt")).toMatch(/workspace\/src\/a\.txt$/);
    expect(await workspacePath(root, "new/dir/file.txt")).toMatch(/workspace\/new\/dir\/file\.txt$/);
    expect(await workspacePath(root, join(root, "src", "a.txt"))).toMatch(/workspace\/src\/a\.txt$/);
  });

  it.each([
    ["..", "a parent"],
    ["../outside/secret.txt", "a sibling through .."],
    ["src/../../outside/secret.txt", ".. in the middle"],
    ["/etc/passwd", "an absolute path elsewhere"],
    ["leak.txt", "a file symlink out"],
    ["out/secret.txt", "a folder symlink out"],
    ["out/new.txt", "a new file under a folder symlink out"],
    ["dangling.txt", "a dangling symlink"],
    ["", "empty"],
    ["a\0b", "a NUL byte"],
  ])("refuses %j (%s)", async (path) => {
    await expect(workspacePath(root, path)).rejects.toBeInstanceOf(PathOutsideWorkspace);
  });
});

describe("file tools", () => {
  it("write, edit and read inside the workspace", async () => {
    await call(writeTool(root), { path: "notes/todo.md", content: "- one\n- two\n" });
    await call(editTool(root), { path: "notes/todo.md", oldText: "- two", newText: "- two (done)" });
    const read = await call(readTool(root), { path: "notes/todo.md" });
    expect(read.content[0]!.text).toBe("- one\n- two (done)\n");
    const range = await call(readTool(root), { path: "src/a.txt", offset: 2, limit: 1 });
    expect(range.content[0]!.text).toBe("beta");
  });

  it("edit refuses a text that is missing or not unique", async () => {
    writeFileSync(join(root, "twice.txt"), "x x");
    await expect(call(editTool(root), { path: "twice.txt", oldText: "x", newText: "y" })).rejects.toThrow(/more than once/);
    await expect(call(editTool(root), { path: "twice.txt", oldText: "z", newText: "y" })).rejects.toThrow(/does not occur/);
  });

  it("no tool reads, writes or edits through an escape; nothing outside changes", async () => {
    for (const path of ["../outside/secret.txt", "/etc/hostname", "leak.txt", "out/secret.txt"]) {
      await expect(call(readTool(root), { path }), path).rejects.toBeInstanceOf(PathOutsideWorkspace);
      await expect(call(writeTool(root), { path, content: "pwned" }), path).rejects.toBeInstanceOf(PathOutsideWorkspace);
      await expect(call(editTool(root), { path, oldText: "outside", newText: "pwned" }), path).rejects.toBeInstanceOf(PathOutsideWorkspace);
    }
    await expect(call(writeTool(root), { path: "dangling.txt", content: "pwned" })).rejects.toBeInstanceOf(PathOutsideWorkspace);
    await expect(call(writeTool(root), { path: "out/new.txt", content: "pwned" })).rejects.toBeInstanceOf(PathOutsideWorkspace);
    expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("outside secret");
    expect(existsSync(join(outside, "not-yet.txt"))).toBe(false);
    expect(existsSync(join(outside, "new.txt"))).toBe(false);
  });
});

describe("bash tool", () => {
  it("runs in the workspace and streams output while the command runs", async () => {
    const updates: { chunk: string; at: number }[] = [];
    const started = Date.now();
    const result = await (bashTool(root).execute as (...a: unknown[]) => Promise<{ content: { text: string }[]; isError?: boolean; details: unknown }>)(
      "c",
      { command: "pwd; for i in 1 2 3; do echo step $i; sleep 0.3; done" },
      undefined,
      (partial: { details: { chunk: string } }) => updates.push({ chunk: partial.details.chunk, at: Date.now() - started }),
    );
    expect(result.isError).toBe(false);
    expect(result.content[0]!.text).toMatch(/workspace\nstep 1\nstep 2\nstep 3\n\[exit code 0\]$/);
    const stepUpdates = updates.filter((u) => /step/.test(u.chunk));
    expect(stepUpdates.length).toBeGreaterThanOrEqual(2); // not one blob at the end
    expect(stepUpdates.at(-1)!.at - stepUpdates[0]!.at).toBeGreaterThan(200);
  });

  it("a non-zero exit, a timeout and an abort are error results carrying the output", async () => {
    const run = (params: unknown, signal?: AbortSignal) =>
      (bashTool(root).execute as (...a: unknown[]) => Promise<{ content: { text: string }[]; isError?: boolean; details: { timedOut: boolean } }>)("c", params, signal);
    const failed = await run({ command: "echo oops >&2; exit 3" });
    expect(failed.isError).toBe(true);
    expect(failed.content[0]!.text).toBe("oops\n[exit code 3]");
    const slow = await run({ command: "echo begun; sleep 30", timeoutSeconds: 1 });
    expect(slow.isError).toBe(true);
    expect(slow.details.timedOut).toBe(true);
    expect(slow.content[0]!.text).toMatch(/^begun\n\[timed out after 1 s\]$/);
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 300);
    const aborted = await run({ command: "sleep 30" }, abort.signal);
    expect(aborted.isError).toBe(true);
    expect(aborted.content[0]!.text).toMatch(/\[aborted\]$/);
  });
});
