/**
 * Which `bash` commands run without a person's approval: one simple command of a short read-only
 * allowlist, with plain words for arguments. Everything else waits for a decision (ADR 0025's
 * `needsApproval`): the call is recorded as `approval_requested`, nothing runs, and the run parks
 * until someone approves (it runs once) or denies (the model reads why).
 *
 * The check is deliberately narrow, not a shell parser: a command line passes only when it is
 * words of `[A-Za-z0-9_./=:,@%+-]` separated by spaces, so there is no pipe, redirection, `;`,
 * `&`, subshell, quote, variable, glob, history expansion or newline to hide a second command in,
 * and its first word is one of {@link READ_ONLY_COMMANDS}, none of which writes, deletes, runs
 * another program or reads configuration that could. Left out on purpose: `find` (`-delete`,
 * `-exec`), `sort` (`-o` writes), `git` (a repository's config can run programs: `core.fsmonitor`,
 * `diff.external`, pagers), `sed`/`awk` (they write and run). Read-only is not confined: `cat`
 * reads any file the server's user can (the README says so); approval guards changes, not reads.
 */

/** Programs a command may start with to run without approval. */
export const READ_ONLY_COMMANDS: readonly string[] = ["ls", "pwd", "cat", "head", "tail", "wc", "grep", "echo", "stat", "du", "file"];

const PLAIN_WORD = /^[A-Za-z0-9_./=:,@%+-]+$/;

/** True when `command` runs without approval: one allowlisted program, plain words only. */
export function isReadOnlyCommand(command: string): boolean {
  if (!/^[ A-Za-z0-9_./=:,@%+-]+$/.test(command)) return false;
  const words = command.split(" ").filter((w) => w !== "");
  const [program] = words;
  return program !== undefined && READ_ONLY_COMMANDS.includes(program) && words.every((w) => PLAIN_WORD.test(w));
}

/** The `bash` tool's `needsApproval`: every command that is not read-only by {@link isReadOnlyCommand}. */
export function bashNeedsApproval(args: { command: string }): boolean {
  return !isReadOnlyCommand(args.command);
}
