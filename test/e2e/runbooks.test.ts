import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { runRunbook } from "../support/runbook.ts";

/**
 * The runbooks as written: every ```bash block of these files, run command by command in the
 * repository (test/support/runbook.ts: its own network namespace, so the documented ports are
 * free; `./harness-data` from a temporary folder), each `# →` line checked against the output.
 * Point it at more markdown files by adding them here.
 */
const RUNBOOKS = [
  "README.md",
  "docs/guide/quickstart.md",
  "docs/guide/client-and-cli.md",
  "examples/approvals/README.md",
  "examples/triage/README.md",
  "examples/github-bot/README.md",
  "examples/coder/README.md",
  "examples/multitenant/README.md",
  "examples/chat/README.md",
  "examples/scheduler/README.md",
];

const isolated = spawnSync("unshare", ["-rmnpf", "--mount-proc", "true"]).status === 0;
if (!isolated && process.env.CI) throw new Error("runbook tests need unshare (user, mount, network and PID namespaces)");

describe.skipIf(!isolated)("runbooks, verbatim", () => {
  it.each(RUNBOOKS)("%s", async (file) => {
    const result = await runRunbook(file);
    for (const s of result.skipped) console.log(`${file}: not run (${s.why}): ${s.command}`);
    expect(result.failures).toEqual([]);
    expect(result.ran.length).toBeGreaterThan(0);
  }, 300_000);
});
