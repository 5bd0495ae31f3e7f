import { CommanderError } from "commander";
import type { TerminalOutput } from "./record-renderer.ts";

/** What the `harness` command's exit status means; scripts branch on it. */
export const EXIT = {
  /** Done: admitted, delivered, settled `succeeded`, or (cancel) cancelled. */
  ok: 0,
  /** The submission settled `failed` (its error code is printed); for cancel: it settled otherwise than cancelled. */
  settledFailed: 1,
  /** The command line was wrong. */
  usage: 2,
  /** The harness refused the request (HTTP 4xx/5xx with `{error, code}`). */
  refused: 3,
  /** The harness could not be reached or did not answer like one. */
  transport: 4,
  /** Interrupted (Ctrl-C). */
  interrupted: 130,
} as const;

/** A command-line mistake: exit 2 with this message (which names the flag). */
export function usageError(code: string, message: string): CommanderError {
  return new CommanderError(EXIT.usage, `harness.${code}`, `error: ${message}`);
}

/** Where the CLI reads and writes: the process in `main.ts`, buffers in tests. */
export interface CliIo {
  stdout: TerminalOutput;
  stderr: { write(text: string): void };
  env: Readonly<Record<string, string | undefined>>;
  /** Aborted on Ctrl-C. */
  signal?: AbortSignal;
}
