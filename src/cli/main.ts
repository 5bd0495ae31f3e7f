#!/usr/bin/env node
/** The `harness` command (package bin): see `harness --help` and the README's "CLI" section. */
import { EXIT, runCli } from "./program.ts";

const interrupt = new AbortController();
// `harness tail … | head` closes the pipe early: that is the reader's choice, not an error.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(EXIT.ok);
  throw err;
});
process.once("SIGINT", () => interrupt.abort(new Error("interrupted")));

const status = await runCli(process.argv.slice(2), {
  stdout: { write: (text) => process.stdout.write(text), isTTY: process.stdout.isTTY === true },
  stderr: process.stderr,
  env: process.env,
  signal: interrupt.signal,
});
process.exitCode = interrupt.signal.aborted ? EXIT.interrupted : status;
