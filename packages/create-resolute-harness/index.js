#!/usr/bin/env node
/**
 * `npm create resolute-harness@latest [dir] [--aws] [--name <name>]`: npm installs this package
 * with the `resolute-harness` of the same version and runs this bin, which runs that version's
 * `harness init` (the folder defaults to my-agents). Kept to one file of plain JavaScript: it is
 * run as it is published, with no build.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const args = process.argv.slice(2);
// `npm create resolute-harness` with no folder: a new one, not the current folder (harness init's default).
const wantsHelp = args.some((a) => a === "-h" || a === "--help");
const positional = args.filter((a, i) => !a.startsWith("-") && args[i - 1] !== "--name");
if (positional.length === 0 && !wantsHelp) args.unshift("my-agents");

// The installed harness's CLI, found from its main entry (dist/index.js → dist/cli/main.js).
const cli = fileURLToPath(new URL("./cli/main.js", import.meta.resolve("resolute-harness")));
const result = spawnSync(process.execPath, ["--disable-warning=ExperimentalWarning", cli, "init", ...args], { stdio: "inherit" });
if (result.error) {
  console.error(`create-resolute-harness: cannot run harness init: ${result.error.message}`);
  process.exit(1);
}
process.exit(result.status ?? 1);
