import { execFileSync } from "node:child_process";
import { linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync, existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bashNeedsApproval, isReadOnlyCommand } from "../../../examples/coder/bash-approval.ts";
import { bashEnvironment, bashTool } from "../../../examples/coder/bash-tool.ts";
import { editTool, MAX_EDIT_BYTES, MAX_READ_BYTES, readTool, writeTool } from "../../../examples/coder/file-tools.ts";
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

describe("file tools on what is not an ordinary file of the workspace (issue 24)", () => {
  it("FIFOs are refused at once: five reads do not hold libuv's file threads, and other file work goes on", async () => {
    const fifos = ["p1", "p2", "p3", "p4", "p5"].map((name) => join(root, `${name}.fifo`));
    for (const fifo of fifos) execFileSync("mkfifo", [fifo]);
    // A blocking open of a FIFO with no writer waits forever on a libuv thread (there are 4).
    const reads = fifos.map((fifo) => call(readTool(root), { path: fifo.slice(root.length + 1) }).then(() => "read", (err: Error) => err.message));
    expect(await Promise.all(reads)).toEqual(fifos.map((f) => `${f.slice(root.length + 1)} is not a regular file (a FIFO): refused`));
    expect(await readFile(join(root, "src", "a.txt"), "utf8")).toBe("alpha\nbeta\ngamma\n");
    await expect(call(editTool(root), { path: "p1.fifo", oldText: "a", newText: "b" })).rejects.toThrow(/not a regular file/);
    // Writing to a FIFO without a reader: refused, not blocked either.
    await expect(call(writeTool(root), { path: "p2.fifo", content: "x" })).rejects.toThrow(/not a regular file/);
    await expect(call(readTool(root), { path: "src" })).rejects.toThrow(/src is not a regular file \(a folder\): refused/);
  });

  it("a hard link to a file outside the workspace is refused by read, edit and write; the outside file is untouched", async () => {
    const target = join(outside, "hard.txt");
    writeFileSync(target, "outside via a hard link");
    linkSync(target, join(root, "hard.txt"));
    await expect(call(readTool(root), { path: "hard.txt" })).rejects.toThrow(/hard\.txt has 2 hard links: refused/);
    await expect(call(editTool(root), { path: "hard.txt", oldText: "outside", newText: "pwned" })).rejects.toThrow(/hard links/);
    await expect(call(writeTool(root), { path: "hard.txt", content: "pwned" })).rejects.toThrow(/hard links/);
    expect(readFileSync(target, "utf8")).toBe("outside via a hard link");
  });

  it("a 400 MB file: read takes at most its byte budget and says so; edit refuses it", async () => {
    const big = join(root, "big.log");
    writeFileSync(big, "first line\nsecond line\n");
    truncateSync(big, 400 * 1024 * 1024); // sparse: no disk used
    const read = await call(readTool(root), { path: "big.log", limit: 1 });
    expect(read.content[0]!.text).toMatch(/^first line\n\[the file is 419430400 bytes: only its first 4194304 were read/);
    expect(read.details).toMatchObject({ bytesRead: MAX_READ_BYTES, size: 400 * 1024 * 1024 });
    await expect(call(editTool(root), { path: "big.log", oldText: "first", newText: "1st" })).rejects.toThrow(
      new RegExp(`big\\.log is 419430400 bytes: edit rewrites files of at most ${MAX_EDIT_BYTES} bytes`),
    );
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

  it("a timeout and an abort end setsid descendants too, and the call returns at once (it waited for them before)", async () => {
    const run = (params: unknown, signal?: AbortSignal) =>
      (bashTool(root).execute as (...a: unknown[]) => Promise<{ content: { text: string }[]; isError?: boolean; details: { timedOut: boolean } }>)("c", params, signal);
    const pidIn = (text: string) => Number(/pid (\d+)/.exec(text)![1]);

    const started = Date.now();
    const timedOut = await run({ command: "setsid sleep 45 & echo pid $!; wait", timeoutSeconds: 1 });
    expect(timedOut.details.timedOut).toBe(true);
    expect(Date.now() - started).toBeLessThan(15_000); // 45 s before: the pipe stayed open
    await expectGone(pidIn(timedOut.content[0]!.text));

    const abort = new AbortController();
    const pending = run({ command: "setsid bash -c 'sleep 45' & echo pid $!; wait" }, abort.signal);
    await new Promise((r) => setTimeout(r, 500));
    abort.abort();
    const aborted = await pending;
    expect(aborted.content[0]!.text).toMatch(/\[aborted\]$/);
    await expectGone(pidIn(aborted.content[0]!.text));
  });

  it("a timeout ends descendants that dropped the environment marker or detached twice (env -u, env -i, a subshell's setsid)", async () => {
    // A fraction unique to this test process: the sleeps' command lines say whose they are.
    const tag = `.0${process.pid}1`;
    const result = await (bashTool(root).execute as (...a: unknown[]) => Promise<{ details: { timedOut: boolean } }>)("c", {
      command:
        `env -u CODER_BASH_CALL setsid sleep 301${tag} & env -i /usr/bin/setsid /bin/sleep 302${tag} & ` +
        `(env -u CODER_BASH_CALL setsid sleep 303${tag} > /dev/null 2>&1 &) ; sleep 30`,
      timeoutSeconds: 2,
    });
    expect(result.details.timedOut).toBe(true);
    const left = survivors(tag);
    for (const pid of left) process.kill(pid, "SIGKILL");
    expect(left).toEqual([]);
  });

  it("a background process keeps running after bash exits, writing to its output (it died of SIGPIPE at its first write)", async () => {
    const alive = join(root, "alive.txt");
    const result = await (bashTool(root).execute as (...a: unknown[]) => Promise<{ content: { text: string }[]; isError?: boolean }>)("c", {
      command: "(sleep 1; echo still-here; echo ok > alive.txt) & echo started",
    });
    expect(result.isError).toBe(false);
    expect(result.content[0]!.text).toBe("started\n[exit code 0]");
    const deadline = Date.now() + 15_000;
    while (!existsSync(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(existsSync(alive)).toBe(true);
    rmSync(alive);
  });

  it("a command that leaves a background process holding its output ends when bash exits", async () => {
    const started = Date.now();
    const result = await (bashTool(root).execute as (...a: unknown[]) => Promise<{ content: { text: string }[]; isError?: boolean }>)("c", {
      command: "setsid sleep 45 & echo pid $!",
    });
    expect(result.isError).toBe(false);
    expect(Date.now() - started).toBeLessThan(15_000);
    const pid = Number(/pid (\d+)/.exec(result.content[0]!.text)![1]);
    process.kill(pid, "SIGKILL"); // left running on purpose (a dev server would be): clean up
  });
});

/** Pids of live (not zombie) processes whose command line holds `tag`. */
function survivors(tag: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc").filter((e) => /^\d+$/.test(e))) {
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "latin1");
      if (!/sleep\0/.test(cmdline) || !cmdline.includes(tag)) continue;
      if (readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1]?.[0] === "Z") continue;
      pids.push(Number(entry));
    } catch {
      // gone
    }
  }
  return pids;
}

/** Waits until `pid` is gone (or a zombie waiting for its reaper). */
async function expectGone(pid: number): Promise<void> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    let state: string | undefined;
    try {
      state = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0];
    } catch {
      return; // gone
    }
    if (state === "Z") return;
    if (Date.now() > deadline) throw new Error(`process ${pid} still running (state ${state})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}


describe("bash approval (issue 22): which commands run without a person", () => {
  it("one read-only command of the allowlist, plain words only, runs without approval", async () => {
    for (const command of ["ls", "ls -la src", "cat notes.md", "grep -rn TODO src", "head -n 20 src/a.txt", "wc -l src/a.txt", "pwd", "echo hello", "du -sh ."]) {
      expect(isReadOnlyCommand(command), command).toBe(true);
      expect(bashTool(root).needsApproval).toBeTypeOf("function");
      expect(await (bashTool(root).needsApproval as (a: { command: string }) => Promise<boolean>)({ command }), command).toBe(false);
    }
  });

  it("anything else asks: other programs, and allowlisted ones with a second command, a redirection, a substitution, a glob or quotes", async () => {
    for (const command of [
      "rm -rf .",
      "for i in 1 2 3; do echo $i; done",
      "find . -delete",
      "sort -o out.txt in.txt",
      "git status",
      "sed -i s/a/b/ src/a.txt",
      "ls; rm -rf .",
      "ls && rm x",
      "ls | sh",
      "echo hi > notes.md",
      "cat < /etc/passwd",
      "echo $(rm -rf .)",
      "echo `id`",
      "cat $HOME/.ssh/id_rsa",
      "ls *",
      "echo 'quoted'",
      "ls\nrm -rf .",
      "ls &",
      "grep -r x src\\",
      "",
      "   ",
      "LS",
      "constructor",
      "toString",
    ]) {
      expect(isReadOnlyCommand(command), JSON.stringify(command)).toBe(false);
      expect(await bashNeedsApproval(root, { command }), JSON.stringify(command)).toBe(true);
    }
  });
});

describe("bash approval (issue 33): the allowlist reads the workspace only, and writes nothing", () => {
  it("a path outside the workspace asks: absolute, `..`, a symlink out, /proc, a hard link to a file outside", async () => {
    linkSync(join(outside, "secret.txt"), join(root, "hard-secret.txt"));
    try {
      for (const command of [
        "cat /proc/self/environ",
        "cat /etc/passwd",
        `cat ${join(outside, "secret.txt")}`,
        "cat ../outside/secret.txt",
        "cat src/../../outside/secret.txt",
        "cat leak.txt",
        "ls out",
        "ls -la /",
        "grep -r secret /proc/self",
        "grep -rn x src ..",
        "grep -e x -r ../outside",
        "head -n 5 /etc/passwd",
        "tail -n5 out/secret.txt",
        "wc -l dangling.txt",
        "stat /",
        "du -sh ..",
        "file /proc/self/environ",
        "cat hard-secret.txt",
        "cat -- /etc/passwd",
      ]) {
        expect(isReadOnlyCommand(command), `${command}: its words are fine`).toBe(true);
        expect(await bashNeedsApproval(root, { command }), command).toBe(true);
      }
    } finally {
      rmSync(join(root, "hard-secret.txt"));
    }
  });

  it("flags that write, read a file they name, follow links out, or never end ask; so does any long option", async () => {
    for (const command of [
      "file -C -m big",
      "file -C",
      "file -m /etc/magic src/a.txt",
      "file -z src/a.txt",
      "grep -f /etc/passwd src/a.txt",
      "grep -R x .",
      "grep --include=x y src",
      "du -X /etc/passwd .",
      "du -L .",
      "ls -L out",
      "tail -f src/a.txt",
      "tail -F src/a.txt",
      "wc --files0-from=/etc/passwd",
      "head -n x src/a.txt",
      "head -n",
      "pwd src",
      "stat -c %n src/a.txt",
    ]) {
      expect(isReadOnlyCommand(command), command).toBe(false);
      expect(await bashNeedsApproval(root, { command }), command).toBe(true);
    }
  });

  it("what stays inside runs at once: links that stay inside, grep's pattern, -e, counts, `--`", async () => {
    for (const command of [
      "cat src-link/a.txt",
      "grep -e /etc/passwd -rn src",
      "grep /etc/passwd src/a.txt",
      "grep -c -i ALPHA src/a.txt",
      "tail -n +2 src/a.txt",
      "head -n5 src/a.txt",
      "head -c 10 -- src/a.txt",
      "ls -laR",
      "du -d 1 -h src",
      "file -b src/a.txt",
      "stat -L src-link",
      "echo /etc/passwd ../x -C",
      "cat missing.txt",
    ]) {
      expect(await bashNeedsApproval(root, { command }), command).toBe(false);
    }
  });

  it("bash gets none of the server's variables but what a shell needs (and CODER_BASH_ENV's names); PATH without the workspace or relative folders", async () => {
    const saved = { ...process.env };
    process.env.API_TOKEN = "api-token-value";
    process.env.ANTHROPIC_API_KEY = "sk-ant-value";
    process.env.CODER_PASSED = "passed-by-name";
    process.env.CODER_BASH_ENV = "CODER_PASSED";
    process.env.BASH_ENV = join(root, "src", "a.txt");
    try {
      const result = await call(bashTool(root), { command: "cat /proc/self/environ | tr '\\0' '\\n'" });
      const text = result.content[0]!.text;
      expect(result.isError, text).toBeFalsy();
      expect(text).not.toContain("api-token-value");
      expect(text).not.toContain("sk-ant-value");
      expect(text).not.toMatch(/^(API_TOKEN|ANTHROPIC_API_KEY|BASH_ENV)=/m);
      expect(text).toMatch(/^PATH=\//m);
      expect(text).toMatch(/^CODER_BASH_CALL=/m);
      expect(text).toContain("CODER_PASSED=passed-by-name");
    } finally {
      for (const name of ["API_TOKEN", "ANTHROPIC_API_KEY", "CODER_PASSED", "CODER_BASH_ENV", "BASH_ENV"]) {
        if (saved[name] === undefined) delete process.env[name];
        else process.env[name] = saved[name];
      }
    }
    const env = bashEnvironment(root, "m", { PATH: `.:${join(root, "bin")}::/usr/bin:bin:/bin`, HOME: "/home/x", SECRET_KEY: "k" });
    expect(env).toEqual({ PATH: "/usr/bin:/bin", HOME: "/home/x", CODER_BASH_CALL: "m" });
  });
});
