import { spawn } from "node:child_process";
import type { AgentTool } from "../../src/agent/agent-setup.ts";
import { defineTool } from "../../src/agent/define-tool.ts";
import * as schema from "../../src/agent/tool-schema.ts";

/** The output kept for the model: the last this many characters (a build log can be huge). */
const MAX_OUTPUT_CHARS = 32 * 1024;
const DEFAULT_TIMEOUT_S = 60;
const MAX_TIMEOUT_S = 600;

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
 * non-zero exit, a timeout or an abort is an error result carrying the output.
 */
export function bashTool(root: string): AgentTool<typeof parameters, BashUpdate | BashDetails> {
  return defineTool<typeof parameters, BashUpdate | BashDetails>({
    name: "bash",
    label: "Run a command",
    description: "Runs a bash command in the workspace and returns its output (stdout and stderr) and exit code.",
    parameters,
    async execute(_callId, { command, timeoutSeconds }, signal, onUpdate) {
      const timeoutMs = (timeoutSeconds ?? DEFAULT_TIMEOUT_S) * 1000;
      // Its own process group, so a timeout or abort ends the whole pipeline, not just bash.
      const child = spawn("bash", ["-c", command], { cwd: root, detached: true, stdio: ["ignore", "pipe", "pipe"] });
      let output = "";
      let cut = false;
      let timedOut = false;
      const kill = () => {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          // already gone
        }
      };
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
      const [exitCode, exitSignal] = await new Promise<[number | null, string | null]>((resolve, reject) => {
        child.once("error", reject);
        child.once("close", (code, sig) => resolve([code, sig]));
      }).finally(() => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", kill);
      });
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
        isError: exitCode !== 0,
      };
    },
  });
}
