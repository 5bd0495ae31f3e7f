/**
 * The Node options a worker thread of this process starts with (issue 33).
 *
 * A worker given no `execArgv` inherits the parent's parsed options as they are, `--input-type`
 * included, and a file entry then refuses to load (`node --input-type=module -e …`, piped
 * stdin). Given an `execArgv`, Node parses it afresh and refuses what a thread cannot have on its
 * own: V8 options (`--max-semi-space-size=2` of `npm start`, the `--max-old-space-size` and
 * `--expose-gc` Lambda's Node bootstrap adds, and the local function host copies) and per-process
 * options (`--title`, `--v8-pool-size`, `--openssl-config`, …): `ERR_WORKER_INVALID_EXEC_ARGV`.
 *
 * So a worker gets the parent's options minus the two kinds it cannot take:
 * - the options about the parent's main script (`-e`/`--eval`, `-p`/`--print`, `--input-type`);
 * - the options Node refuses in a worker, as Node itself names them: the first construction
 *   that is refused drops the options its error lists (and the value of one given as a separate
 *   argument) and tries again; the list that was accepted is kept for the process. Nothing the
 *   user asked for is lost: those options are process-wide, so the thread runs under them anyway
 *   (a V8 heap flag applies to every isolate; a worker's own heap ceiling is its
 *   `resourceLimits`, which the result-schema thread sets).
 *
 * What is kept matters to the thread's code: `--conditions`, `--import`/`--require` (loaders,
 * instrumentation), `--enable-source-maps`, `--disable-warning`, `--experimental-*`. Asking Node
 * rather than keeping a list of refused names means a flag a later Node refuses cannot break
 * workers again; an allowlist would silently drop whatever it did not name.
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
