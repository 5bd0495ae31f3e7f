/**
 * A line sink for `ConsoleLogOptions.write` that writes the lines of one event-loop turn to
 * stdout in one write, not one `console.log` each: on a pipe every write blocks in a syscall, and
 * a busy server logs a few lines per submission. Lines still pending when the process exits are
 * written then (stdout writes to a pipe or file are synchronous), so none is lost.
 */
let pending = "";
let exitHooked = false;

function flush(): void {
  if (pending === "") return;
  const text = pending;
  pending = "";
  process.stdout.write(text);
}

/** Queues `line` (a newline is added) for stdout. */
export function stdoutLine(line: string): void {
  if (pending === "") {
    setImmediate(flush);
    if (!exitHooked) {
      exitHooked = true;
      process.once("exit", flush);
    }
  }
  pending += `${line}\n`;
}
