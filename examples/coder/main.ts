/**
 * The coder (`npm run example -- coder`): read/write/edit/bash tools over one workspace, on
 * http://127.0.0.1:8490 (loopback only: the bash tool runs any command). See README.md first.
 * Environment: PORT (8490), DATA_DIR (./harness-data/coder), LEASE_MS, LOG_LEVEL, WORKSPACE
 * ($DATA_DIR/workspace), CODER_BASH_ENV (more variable names a bash command may see), API_TOKEN
 * (a bearer token every /agents request must carry; required for CORS_ORIGINS). HOST may only
 * name a loopback address.
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { HarnessEvent } from "../../src/ports/observer.ts";
import { bearerAuth } from "../../src/http/bearer-auth.ts";
import { exampleFail, exampleSettings, log } from "../shared/settings.ts";
import { startExample } from "../shared/start-example.ts";
import { CODER, coderAgents } from "./agents.ts";
import type { BashUpdate } from "./bash-tool.ts";

const LOOPBACK = ["127.0.0.1", "localhost", "::1"];

const settings = exampleSettings("coder", 8490);
if (!LOOPBACK.includes(settings.hostname)) {
  exampleFail("coder", `HOST=${settings.hostname} refused: the bash tool runs any command as this user, so this example listens on loopback only`);
}
// A page allowed by CORS_ORIGINS could run commands through the bash tool in its visitors'
// browsers (an `Origin: null` page too, with `*`): only behind a token a page does not have.
const apiToken = process.env.API_TOKEN ?? "";
if (settings.corsOrigins.length > 0 && apiToken === "") {
  exampleFail("coder", "CORS_ORIGINS refused without API_TOKEN: a page it allows could run any command through the bash tool; set API_TOKEN (requests then need Authorization: Bearer <token>)");
}
const workspace = resolve(process.env.WORKSPACE || join(settings.dataDir, "workspace"));
mkdirSync(workspace, { recursive: true });

await startExample({
  settings,
  agents: coderAgents(workspace),
  observers: [toolNarrator],
  middleware: apiToken === "" ? undefined : [bearerAuth({ token: apiToken })],
  model: "local-coder (keyless)",
  tryLines: (base) => [
    `curl -s '${base}/agents/${CODER}/demo?wait=true' -d '{"kind":"user","body":"$ for i in 1 2 3; do echo step $i; sleep 1; done"}'`,
    `curl -N ${base}/agents/${CODER}/demo`,
  ],
});
log(`workspace: ${workspace} (the file tools cannot leave it; bash can: see the README)`);
if (apiToken !== "") log("API_TOKEN is set: /agents requests need Authorization: Bearer <token>");

/** Lines of one call's output the log narrates; the rest is counted, not written. */
const NARRATED_LINES_PER_CALL = 100;
/** Longest narrated line; longer ones are cut. */
const NARRATED_LINE_CHARS = 300;
const narrated = new Map<string, number>();

/**
 * Narrates tool calls as they run: the start, then the bash output as it streams, at most
 * {@link NARRATED_LINES_PER_CALL} lines per call (a command printing a million lines would
 * otherwise write as many synchronous log lines and stall the server), then one line saying how
 * many were left out.
 */
function toolNarrator(event: HarnessEvent): void {
  if (event.type === "tool_call_started") {
    narrated.set(event.callId, 0);
    log(`tool started ${event.toolName} (${event.callId})`);
  }
  if (event.type === "tool_call_ended") {
    const lines = narrated.get(event.callId) ?? 0;
    narrated.delete(event.callId);
    if (lines > NARRATED_LINES_PER_CALL) log(`  ${event.toolName} | … ${lines - NARRATED_LINES_PER_CALL} more lines not narrated (${event.callId})`);
  }
  if (event.type !== "tool_call_updated") return;
  const chunk = (event.result as { details?: Partial<BashUpdate> } | undefined)?.details?.chunk;
  if (typeof chunk !== "string") return;
  let count = narrated.get(event.callId) ?? 0;
  for (const line of chunk.replace(/\n$/, "").split("\n")) {
    if (++count <= NARRATED_LINES_PER_CALL) {
      log(`  ${event.toolName} | ${line.length > NARRATED_LINE_CHARS ? `${line.slice(0, NARRATED_LINE_CHARS)}…` : line}`);
    }
  }
  narrated.set(event.callId, count);
}
