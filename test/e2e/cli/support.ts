import { execFile } from "node:child_process";
import { join } from "node:path";

/** The `harness` command as a user runs it: a separate process (against a running server). */
const MAIN = join(import.meta.dirname, "..", "..", "..", "src", "cli", "main.ts");

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `harness <args>` with only PATH and `env` in its environment. */
export function harness(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--disable-warning=ExperimentalWarning", MAIN, ...args],
      { env: { PATH: process.env.PATH ?? "", ...env }, timeout: 30_000 },
      (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? -1) : 0, stdout, stderr }),
    );
  });
}
