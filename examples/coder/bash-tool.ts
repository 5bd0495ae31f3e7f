import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import type { AgentTool } from "../../src/agent/agent-setup.ts";
import { defineTool } from "../../src/agent/define-tool.ts";
import * as schema from "../../src/agent/tool-schema.ts";

/** The output kept for the model: the last this many characters (a build log can be huge). */
const MAX_OUTPUT_CHARS = 32 * 1024;
const DEFAULT_TIMEOUT_S = 60;
const MAX_TIMEOUT_S = 600;
/** After bash exits, how long output still held open by its background processes is read. */
const DRAIN_MS = 200;

/** The environment variable every process a call starts inherits: how its whole tree is found. */
export const CALL_MARKER = "CODER_BASH_CALL";

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
 * running (a dev server, say) without their output being read.
 */
export function bashTool(root: string): AgentTool<typeof parameters, BashUpdate | BashDetails> {
  return defineTool<typeof parameters, BashUpdate | BashDetails>({
    name: "bash",
    label: "Run a command",
    description: "Runs a bash command in the workspace and returns its output (stdout and stderr) and exit code.",
    parameters,
    async execute(_callId, { command, timeoutSeconds }, signal, onUpdate) {
      const timeoutMs = (timeoutSeconds ?? DEFAULT_TIMEOUT_S) * 1000;
      // Its own process group, so a timeout or abort ends the whole pipeline, not just bash; and a
      // marker in the environment of everything it starts, so `setsid` descendants (another
      // session and group) are found and ended too.
      const marker = randomUUID();
      const child = spawn("bash", ["-c", command], {
        cwd: root,
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, [CALL_MARKER]: marker },
      });
      let output = "";
      let cut = false;
      let timedOut = false;
      const kill = () => killTree(child.pid, marker);
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
      // a moment, then let go (waiting for the pipes to close would wait for them).
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
        child.stdout!.off("data", onData).destroy();
        child.stderr!.off("data", onData).destroy();
      });
      // A timeout or an abort ends what the command left running as well.
      if (timedOut || signal?.aborted) kill();
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
 * SIGKILL to bash's process group and to every process carrying the call's marker (Linux: read
 * from /proc; elsewhere the group alone). Repeated while new ones appear, since a process may fork
 * between a scan and its kill.
 */
export function killTree(pid: number | undefined, marker: string): void {
  if (pid !== undefined) signalQuietly(-pid);
  for (let round = 0; round < 5; round++) {
    const found = markedProcesses(marker);
    if (found.length === 0) return;
    for (const p of found) signalQuietly(p);
  }
}

/** Pids of this user's processes whose environment carries `CALL_MARKER=marker`. */
export function markedProcesses(marker: string): number[] {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const needle = `${CALL_MARKER}=${marker}\0`;
  const pids: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, "latin1").includes(needle)) pids.push(Number(entry));
    } catch {
      // gone, or another user's
    }
  }
  return pids;
}

function signalQuietly(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}
