/**
 * The Node options a worker thread of this process starts with (docs/adr/0039). Given an
 * `execArgv`, Node parses it afresh and refuses V8 and per-process options in a worker
 * (`ERR_WORKER_INVALID_EXEC_ARGV`): `npm start`'s `--max-semi-space-size=2`, the `--expose-gc` and
 * heap flags of Lambda's Node bootstrap. Given none, the worker inherits `--input-type` and refuses
 * its file entry. So a worker gets the parent's options minus the main script's (`-e`, `-p`,
 * `--input-type`) and minus those Node's refusal names; those are process-wide, so the thread runs
 * under them anyway. What it keeps matters to the thread's code: `--conditions`, `--import`,
 * `--require`, `--enable-source-maps`. Asking Node, rather than a list of names, keeps a flag a
 * later Node refuses from breaking workers again.
 */
import { Worker, type WorkerOptions } from "node:worker_threads";

/** Options that take a value and only concern the parent's main script. */
const MAIN_SCRIPT_OPTIONS = ["-e", "--eval", "-p", "--print", "--input-type"];

/** How Node words the refusal (lib/internal/errors.js, `ERR_WORKER_INVALID_EXEC_ARGV`). */
const REFUSAL = "Initiated Worker with invalid execArgv flags: ";

/** `given` without the options about the parent's main script (and their values). */
export function withoutMainScriptOptions(given: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < given.length; i++) {
    const arg = given[i]!;
    if (MAIN_SCRIPT_OPTIONS.includes(arg)) i++;
    else if (!MAIN_SCRIPT_OPTIONS.some((option) => option.startsWith("--") && arg.startsWith(`${option}=`))) kept.push(arg);
  }
  return kept;
}

/**
 * `argv` without the options `refusal` (an `ERR_WORKER_INVALID_EXEC_ARGV` message) names, or
 * undefined when it names none of them (nothing to drop: another cause, or a new wording). An
 * option named without `=` takes the next argument with it when that is not an option: `--title
 * foo` is named `--title`. (V8 options always carry their value after `=`.)
 */
export function withoutRefused(argv: readonly string[], refusal: string): string[] | undefined {
  if (!refusal.startsWith(REFUSAL)) return undefined;
  const refused = new Set(refusal.slice(REFUSAL.length).split(", "));
  const kept: string[] = [];
  let dropped = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!refused.has(arg)) {
      kept.push(arg);
      continue;
    }
    dropped = true;
    const next = argv[i + 1];
    if (!arg.includes("=") && next !== undefined && !next.startsWith("-")) i++;
  }
  return dropped ? kept : undefined;
}

/** Accepted lists by the parent's options they came from (one entry in practice: execArgv is fixed). */
const accepted = new Map<string, string[]>();

/**
 * A worker thread on `entry` with the parent's Node options it can take (see the module's
 * comment). `given` is the parent's options (default `process.execArgv`); `options.execArgv` is
 * ignored. Throws what `new Worker` throws for any other reason.
 */
export function startWorker(entry: URL, options: Omit<WorkerOptions, "execArgv"> = {}, given: readonly string[] = process.execArgv): Worker {
  const key = given.join("\0");
  let argv = accepted.get(key) ?? withoutMainScriptOptions(given);
  // Each refusal drops at least one argument, so this ends; the last try is with none.
  for (;;) {
    try {
      const worker = new Worker(entry, { ...options, execArgv: argv });
      accepted.set(key, argv);
      return worker;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code !== "ERR_WORKER_INVALID_EXEC_ARGV" || argv.length === 0) throw err;
      argv = withoutRefused(argv, (err as Error).message) ?? [];
    }
  }
}
