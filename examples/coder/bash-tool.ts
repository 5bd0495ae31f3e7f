import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { closeSync, openSync, readdirSync, readFileSync, readlinkSync, unlinkSync } from "node:fs";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, isAbsolute, join, relative } from "node:path";
import type { AgentTool } from "../../src/agent/agent-setup.ts";
import { defineTool, type HarnessTool } from "../../src/agent/define-tool.ts";
import * as schema from "../../src/agent/tool-schema.ts";
import { bashNeedsApproval } from "./bash-approval.ts";

/** The output kept for the model: the last this many characters (a build log can be huge). */
const MAX_OUTPUT_CHARS = 32 * 1024;
const DEFAULT_TIMEOUT_S = 60;
const MAX_TIMEOUT_S = 600;
/** After bash exits, how long output still held open by its background processes is read. */
const DRAIN_MS = 200;

/** The environment variable every process a call starts inherits: one way its whole tree is found. */
export const CALL_MARKER = "CODER_BASH_CALL";

/** The descriptor every process a call starts inherits (an unlinked file named after the call): another way. */
export const MARKER_FD = 3;

/**
 * The server's variables a command gets (issue 33: `cat /proc/self/environ` showed `API_TOKEN` and
 * `ANTHROPIC_API_KEY`): what a shell and its programs need to run, none of the server's settings
 * or secrets. `CODER_BASH_ENV` (comma-separated names) passes more, by name.
 */
export const BASH_ENV_NAMES: readonly string[] = ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR"];

/**
 * The environment bash runs with: {@link BASH_ENV_NAMES}, `LC_*`, the names `CODER_BASH_ENV`
 * lists, and the call's marker. `PATH` keeps only absolute folders outside the workspace: a
 * relative one (`.`, an empty entry) or one inside would run a program the write tool put there,
 * without approval, under an allowlisted name. Nothing else passes: not the server's secrets, nor
 * `BASH_ENV` or exported functions, which would run code before the command.
 */
export function bashEnvironment(root: string, marker: string, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const extra = (env.CODER_BASH_ENV ?? "").split(",").map((n) => n.trim()).filter((n) => n !== "");
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (BASH_ENV_NAMES.includes(name) || name.startsWith("LC_") || extra.includes(name)) out[name] = value;
  }
  const inside = (dir: string) => {
    const rel = relative(root, dir);
    return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
  };
  out.PATH = (out.PATH ?? "/usr/local/bin:/usr/bin:/bin").split(delimiter).filter((dir) => isAbsolute(dir) && !inside(dir)).join(delimiter);
  out[CALL_MARKER] = marker;
  return out;
}

/** How the processes of one call are found: its marker, the marker file's path, bash's pid. */
export interface CallMarks {
  marker: string;
  markerFile: string;
  pid: number | undefined;
}

const parameters = schema.obj({
  command: schema.str({ minLength: 1, description: "A bash command line, run in the workspace." }),
  timeoutSeconds: schema.opt(schema.int({ minimum: 1, maximum: MAX_TIMEOUT_S, description: `Default ${DEFAULT_TIMEOUT_S}.` })),
});

/** What each partial result of a running command carries beside the output so far. */
export interface BashUpdate {
  /** The output received since the previous update (stdout and stderr, interleaved). */
  chunk: string;
}

/** What the final result carries. */
export interface BashDetails {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  /** True when the start of the output was dropped to keep the last {@link MAX_OUTPUT_CHARS}. */
  cut: boolean;
}

/**
 * `bash`: runs a command line with the workspace as working directory and streams its output as
 * partial results while it runs (each `onUpdate` → a `tool_call_updated` observer event). NOT a
 * sandbox: the command runs with the server's user and can reach anything that user can. A
 * non-zero exit, a timeout or an abort is an error result carrying the output. The call ends when
 * bash exits; a timeout or an abort kills everything the command started, `setsid` descendants
 * included, and processes a command leaves running in the background after a normal exit keep
 * running (a dev server, say) without their output being read. A command off the read-only
 * allowlist of `bash-approval.ts` waits for a person's approval before it runs. The command's
 * environment is scrubbed of the server's ({@link bashEnvironment}).
 */
export function bashTool(root: string): HarnessTool<typeof parameters, BashUpdate | BashDetails> & Pick<AgentTool<typeof parameters, BashUpdate | BashDetails>, "execute"> {
  return defineTool<typeof parameters, BashUpdate | BashDetails>({
    name: "bash",
    label: "Run a command",
    description: "Runs a bash command in the workspace and returns its output (stdout and stderr) and exit code.",
    parameters,
    // A person approves every command but a short read-only allowlist over the workspace (bash-approval.ts).
    needsApproval: (args) => bashNeedsApproval(root, args),
    async execute(_callId, { command, timeoutSeconds }, signal, onUpdate) {
      const timeoutMs = (timeoutSeconds ?? DEFAULT_TIMEOUT_S) * 1000;
      // Its own process group, so a timeout or abort ends the whole pipeline, not just bash; and
      // three marks on everything it starts, so descendants in another session and group
      // (`setsid`) are found and ended too: the marker in the environment, descriptor 3 open on
      // a file named after the call, and the parent links while bash lives. `env -u`/`env -i`
      // drop the first, not the other two; only a command that also closes descriptor 3 and
      // detaches twice escapes (coder is not a sandbox: README).
      const marker = randomUUID();
      const markerFile = join(tmpdir(), `coder-bash-${marker}`);
      const markerFd = openSync(markerFile, "wx", 0o600);
      unlinkSync(markerFile); // nothing left behind; open descriptors still name it
      const child = spawn("bash", ["-c", command], {
        cwd: root,
        detached: true,
        stdio: ["ignore", "pipe", "pipe", markerFd],
        env: bashEnvironment(root, marker),
      });
      closeSync(markerFd);
      const marks: CallMarks = { marker, markerFile, pid: child.pid };
      let output = "";
      let cut = false;
      let timedOut = false;
      const kill = () => killTree(marks);
      const timer = setTimeout(() => ((timedOut = true), kill()), timeoutMs);
      signal?.addEventListener("abort", kill, { once: true });
      const onData = (data: Buffer) => {
        const chunk = data.toString("utf8");
        output += chunk;
        if (output.length > MAX_OUTPUT_CHARS) {
          output = output.slice(-MAX_OUTPUT_CHARS);
          cut = true;
        }
        onUpdate?.({ content: [{ type: "text", text: output }], details: { chunk } });
      };
      child.stdout!.on("data", onData);
      child.stderr!.on("data", onData);
      // The call ends when bash does: output its background processes still hold open is read for
      // a moment, then discarded (waiting for the pipes to close would wait for them; closing
      // them would kill them with SIGPIPE at their next write).
      const [exitCode, exitSignal] = await new Promise<[number | null, string | null]>((resolve, reject) => {
        child.once("error", reject);
        child.once("exit", (code, sig) => {
          const done = () => resolve([code, sig]);
          const drain = setTimeout(done, DRAIN_MS);
          child.once("close", () => (clearTimeout(drain), done()));
        });
      }).finally(() => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", kill);
        for (const out of [child.stdout!, child.stderr!]) (out.off("data", onData).resume() as Socket).unref();
      });
      // A timeout or an abort ends what the command left running as well (bash is gone and its
      // pid free for reuse: its group and the marks only).
      if (timedOut || signal?.aborted) killTree({ ...marks, pid: undefined }, child.pid);
      const status = timedOut
        ? `timed out after ${timeoutMs / 1000} s`
        : signal?.aborted
          ? "aborted"
          : exitCode === 0
            ? "exit code 0"
            : exitSignal !== null
              ? `killed by ${exitSignal}`
              : `exit code ${exitCode}`;
      const details: BashDetails = { exitCode, signal: exitSignal, timedOut, cut };
      return {
        content: [{ type: "text", text: `${cut ? "[… earlier output cut]\n" : ""}${output}${output.endsWith("\n") || output === "" ? "" : "\n"}[${status}]` }],
        details,
        isError: exitCode !== 0 || timedOut || signal?.aborted === true,
      };
    },
  });
}

/**
 * SIGKILL to bash's process group (`group`) and to every process of the call ({@link callProcesses}).
 * Repeated while new ones appear, since a process may fork between a scan and its kill.
 */
export function killTree(marks: CallMarks, group = marks.pid): void {
  if (group !== undefined) signalQuietly(-group);
  for (let round = 0; round < 5; round++) {
    const found = callProcesses(marks);
    if (found.length === 0) return;
    for (const p of found) signalQuietly(p);
  }
}

/**
 * Pids of this user's processes that belong to a call (Linux: read from /proc; elsewhere none):
 * those whose environment carries `CALL_MARKER=marker` or that hold a descriptor on the marker
 * file, and every descendant of them or of bash.
 */
export function callProcesses(marks: CallMarks): number[] {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const needle = `${CALL_MARKER}=${marks.marker}\0`;
  const found = new Set<number>();
  const children = new Map<number, number[]>();
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    const parent = parentOf(pid);
    if (parent !== undefined) children.set(parent, [...(children.get(parent) ?? []), pid]);
    if (marked(pid, needle, marks.markerFile)) found.add(pid);
  }
  const pending = [...found, ...(marks.pid === undefined ? [] : [marks.pid])];
  while (pending.length > 0) {
    for (const child of children.get(pending.pop()!) ?? []) {
      if (found.has(child)) continue;
      found.add(child);
      pending.push(child);
    }
  }
  found.delete(marks.pid ?? -1); // its group is signalled already
  return [...found];
}

/** Whether `pid` carries the call's environment marker or holds a descriptor on its marker file. */
function marked(pid: number, needle: string, markerFile: string): boolean {
  try {
    if (readFileSync(`/proc/${pid}/environ`, "latin1").includes(needle)) return true;
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith(markerFile)) return true;
    }
  } catch {
    // gone, or another user's
  }
  return false;
}

/** The parent pid from `/proc/<pid>/stat` (after the command name, which may hold spaces). */
function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return Number(stat.slice(stat.lastIndexOf(") ") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

function signalQuietly(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}
