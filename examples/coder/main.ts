/**
 * The coder (`npm run example -- coder`): read/write/edit/bash tools over one workspace, on
 * http://127.0.0.1:8490 (loopback only: the bash tool runs any command). See README.md first.
 * Environment: PORT (8490), DATA_DIR (./harness-data/coder), LEASE_MS, LOG_LEVEL, WORKSPACE
 * ($DATA_DIR/workspace). HOST may only name a loopback address.
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { HarnessEvent } from "../../src/ports/observer.ts";
import { exampleFail, exampleSettings, log } from "../shared/settings.ts";
import { startExample } from "../shared/start-example.ts";
import { CODER, coderAgents } from "./agents.ts";
import type { BashUpdate } from "./bash-tool.ts";

const LOOPBACK = ["127.0.0.1", "localhost", "::1"];

const settings = exampleSettings("coder", 8490);
if (!LOOPBACK.includes(settings.hostname)) {
  exampleFail("coder", `HOST=${settings.hostname} refused: the bash tool runs any command as this user, so this example listens on loopback only`);
}
const workspace = resolve(process.env.WORKSPACE || join(settings.dataDir, "workspace"));
mkdirSync(workspace, { recursive: true });

await startExample({
  settings,
  agents: coderAgents(workspace),
  observers: [toolNarrator],
  model: "local-coder (keyless)",
  tryLines: (base) => [
    `curl -s '${base}/agents/${CODER}/demo?wait=true' -d '{"kind":"user","body":"$ for i in 1 2 3; do echo step $i; sleep 1; done"}'`,
    `curl -N ${base}/agents/${CODER}/demo`,
  ],
});
log(`workspace: ${workspace} (the file tools cannot leave it; bash can: see the README)`);

/** Narrates tool calls as they run: the start, then the bash output as it streams. */
function toolNarrator(event: HarnessEvent): void {
  if (event.type === "tool_call_started") log(`tool started ${event.toolName} (${event.callId})`);
  if (event.type !== "tool_call_updated") return;
  const chunk = (event.result as { details?: Partial<BashUpdate> } | undefined)?.details?.chunk;
  if (typeof chunk !== "string") return;
  for (const line of chunk.replace(/\n$/, "").split("\n")) log(`  ${event.toolName} | ${line}`);
}
