import { execFile, spawn } from "node:child_process";
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

/** A `harness <args>` process left running (e.g. `tail --follow`), its output read as it comes. */
export interface RunningHarness {
  stdout(): string;
  stderr(): string;
  exitCode(): number | null;
  kill(): void;
}

export function harnessProcess(args: string[], env: Record<string, string> = {}): RunningHarness {
  const child = spawn(process.execPath, ["--disable-warning=ExperimentalWarning", MAIN, ...args], {
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  return { stdout: () => out, stderr: () => err, exitCode: () => child.exitCode, kill: () => void child.kill("SIGKILL") };
}
