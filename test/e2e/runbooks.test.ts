import { spawnSync } from "node:child_process";
import { describe, it } from "vitest";
import { runRunbook } from "../support/runbook.ts";

/**
 * The runbooks as written: every ```bash block of these files, run command by command in the
 * repository (test/support/runbook.ts: its own network namespace, so the documented ports are
 * free; `./harness-data` from a temporary folder), each `# →` line checked against the output.
 * Point it at more markdown files by adding them here (examples/approvals/README.md is not here:
 * test/e2e/examples/approvals.test.ts runs its one block verbatim and checks more of what it
 * prints). Up to three run side by side (each in namespaces of its own, with its own
 * `./harness-data` and `build/`): most of a runbook's time is waiting on servers, replies written
 * slowly, leases and sleeps; more at once would make the CPU the wait (a runbook's servers answer
 * within bounds a loaded machine can miss).
 */
const RUNBOOKS = [
  "README.md",
  "docs/guide/quickstart.md",
  "docs/guide/client-and-cli.md",
  "examples/triage/README.md",
  "examples/github-bot/README.md",
  "examples/coder/README.md",
  "examples/multitenant/README.md",
  "examples/chat/README.md",
  "examples/scheduler/README.md",
  "examples/mcp/README.md",
];

const isolated = spawnSync("unshare", ["-rmnpf", "--mount-proc", "true"]).status === 0;
if (!isolated && process.env.CI) throw new Error("runbook tests need unshare (user, mount, network and PID namespaces)");

const SIDE_BY_SIDE = 3;
let running = 0;
const waiting: (() => void)[] = [];
async function inTurn<T>(run: () => Promise<T>): Promise<T> {
  while (running >= SIDE_BY_SIDE) await new Promise<void>((r) => waiting.push(r));
  running++;
  try {
    return await run();
  } finally {
    running--;
    waiting.shift()?.();
  }
}

describe.skipIf(!isolated)("runbooks, verbatim", () => {
  it.concurrent.for(RUNBOOKS)("%s", { timeout: 900_000 }, async (file, { expect }) => {
    const result = await inTurn(() => runRunbook(file));
    for (const s of result.skipped) console.log(`${file}: not run (${s.why}): ${s.command}`);
    expect(result.failures).toEqual([]);
    expect(result.ran.length).toBeGreaterThan(0);
  });
});
