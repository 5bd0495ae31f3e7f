/**
 * Which `bash` commands run without a person's approval: one simple command of a short read-only
 * allowlist, each program with the flags it may take, every path it names inside the workspace.
 * Everything else waits for a decision (ADR 0025's `needsApproval`): the call is recorded as
 * `approval_requested`, nothing runs, and the run parks until someone approves (it runs once) or
 * denies (the model reads why).
 *
 * The check is deliberately narrow, not a shell parser: a command line passes only when
 * - it is words of `[A-Za-z0-9_./=:,@%+-]` separated by spaces, so there is no pipe, redirection,
 *   `;`, `&`, subshell, quote, variable, glob, `~`, history expansion or newline to hide a second
 *   command in;
 * - its first word is one of {@link READ_ONLY_COMMANDS}, and every option is one of that
 *   program's {@link COMMAND_RULES}: single-letter flags that neither write, run another program,
 *   read a file named by a flag's value, nor follow symlinks out (issue 33: `file -C -m big` wrote
 *   `big.mgc`; `tail -f` would never end). No long option (`--files0-from`, `--exclude-from`);
 * - every operand that names a file (all but grep's pattern and echo's words) is inside the
 *   workspace by `workspacePath` (no absolute path elsewhere, no `..` out, no symlink out: issue
 *   33, `cat /proc/self/environ` read the server's secrets) and is a directory or a regular file
 *   with one link (a hard link inside can name a file outside, as for the file tools).
 *
 * Left out on purpose: `find` (`-delete`, `-exec`), `sort` (`-o` writes), `git` (a repository's
 * config can run programs: `core.fsmonitor`, `diff.external`, pagers), `sed`/`awk` (they write and
 * run). Recursing programs (`grep -r`, `ls -R`, `du`) do not follow the symlinks they meet, so they
 * stay in the workspace; a hard link made inside it to a file outside (which takes an approved
 * command) is not looked for below a directory operand.
 */
import { lstat } from "node:fs/promises";
import { workspacePath } from "./workspace-path.ts";

/** What a program of the allowlist may be given. */
export interface CommandRule {
  /** Single-letter flags it may take, alone or together (`-la`). */
  readonly flags: string;
  /** Flags that take a value (the rest of the word, `-n20`, or the next word), with what the value may be. */
  readonly valued?: Readonly<Record<string, RegExp>>;
  /** The first operand is a pattern, not a path, unless `-e` gave one (grep). */
  readonly pattern?: boolean;
  /** No operand names a file, and any word goes (echo). */
  readonly words?: boolean;
  /** At most this many operands. */
  readonly maxOperands?: number;
}

const COUNT = /^[+-]?[0-9]+$/;
const NUMBER = /^[0-9]+$/;
const ANY = /^.+$/;

/**
 * The allowlist: program → what it may take. Flags left out because they write (`file -C`),
 * read a file a value names (`file -m`, `grep -f`, `du -X`), follow symlinks out (`ls -L`,
 * `du -L`, `grep -R`), look inside compressed files (`file -z`) or never end (`tail -f`).
 */
export const COMMAND_RULES: Readonly<Record<string, CommandRule>> = {
  ls: { flags: "1aAdFhilnprRStuU" },
  pwd: { flags: "", maxOperands: 0 },
  cat: { flags: "AbeEnstTuv" },
  head: { flags: "qv", valued: { n: COUNT, c: COUNT } },
  tail: { flags: "qv", valued: { n: COUNT, c: COUNT } },
  wc: { flags: "clmwL" },
  grep: { flags: "cEFhHiIlLnoqrsvwxz", valued: { e: ANY, m: NUMBER, A: NUMBER, B: NUMBER, C: NUMBER }, pattern: true },
  echo: { flags: "", words: true },
  stat: { flags: "Lt" },
  du: { flags: "abchkmsSx", valued: { d: NUMBER } },
  file: { flags: "biL" },
};

/** Programs a command may start with to run without approval. */
export const READ_ONLY_COMMANDS: readonly string[] = Object.keys(COMMAND_RULES);

const PLAIN_LINE = /^[ A-Za-z0-9_./=:,@%+-]+$/;

/**
 * The file operands of `command` when it is one allowlisted program with allowed options only
 * (see the module's rules), else `undefined`. Syntax only: whether the files are in the workspace
 * is {@link bashNeedsApproval}'s to check.
 */
export function readOnlyCommandPaths(command: string): string[] | undefined {
  if (!PLAIN_LINE.test(command)) return undefined;
  const words = command.split(" ").filter((w) => w !== "");
  const [program, ...args] = words;
  if (program === undefined || !Object.hasOwn(COMMAND_RULES, program)) return undefined;
  const rule = COMMAND_RULES[program]!;
  if (rule.words) return [];
  const operands: string[] = [];
  let patternGiven = false;
  let options = true;
  for (let i = 0; i < args.length; i++) {
    const word = args[i]!;
    if (options && word === "--") {
      options = false;
      continue;
    }
    if (!options || !word.startsWith("-") || word === "-") {
      operands.push(word);
      continue;
    }
    if (word.startsWith("--")) return undefined; // no long options
    for (let j = 1; j < word.length; j++) {
      const letter = word[j]!;
      const valuePattern = rule.valued?.[letter];
      if (valuePattern !== undefined) {
        const value = j + 1 < word.length ? word.slice(j + 1) : args[++i];
        if (value === undefined || !valuePattern.test(value)) return undefined;
        if (letter === "e") patternGiven = true;
        break;
      }
      if (!rule.flags.includes(letter)) return undefined;
    }
  }
  if (rule.maxOperands !== undefined && operands.length > rule.maxOperands) return undefined;
  return rule.pattern && !patternGiven ? operands.slice(1) : operands;
}

/**
 * True when `command` is read-only by its words alone: one allowlisted program, allowed options,
 * plain words ({@link readOnlyCommandPaths}). Its paths are not checked here.
 */
export function isReadOnlyCommand(command: string): boolean {
  return readOnlyCommandPaths(command) !== undefined;
}

/**
 * The `bash` tool's `needsApproval`: every command but a read-only one ({@link isReadOnlyCommand})
 * whose file operands all lie inside the workspace `root` (symlinks resolved) and are each a
 * directory or a regular file with one link.
 */
export async function bashNeedsApproval(root: string, args: { command: string }): Promise<boolean> {
  const paths = readOnlyCommandPaths(args.command);
  if (paths === undefined) return true;
  for (const path of paths) {
    let real: string;
    try {
      real = await workspacePath(root, path);
    } catch {
      return true; // outside, or cannot tell
    }
    const stats = await lstat(real).catch(() => undefined);
    if (stats === undefined) continue; // nothing there: the program says so
    if (stats.isDirectory()) continue;
    if (!stats.isFile() || stats.nlink > 1) return true;
  }
  return false;
}
