/**
 * The multitenant example (`npm run example -- multitenant`): tenant = instance, sessions as
 * independent ordered queues, on http://127.0.0.1:8489. See README.md for the runbook and the
 * load script. Environment: PORT (8489), HOST, DATA_DIR (./harness-data/multitenant), LEASE_MS,
 * LOG_LEVEL, REPLY_MS (700): how long each keyless answer takes.
 */
import { exampleSettings } from "../shared/settings.ts";
import { startExample } from "../shared/start-example.ts";
import { agents, CONCIERGE } from "./agents.ts";
import { tenantGate, tenantWrites } from "./tenant-gate.ts";

await startExample({
  settings: exampleSettings("multitenant", 8489),
  agents,
  middleware: [tenantGate()],
  // The gate sees the path; a fork names its target instance in its body.
  checkWrite: tenantWrites(),
  model: "local-concierge (keyless)",
  tryLines: (base) => [
    `curl -s '${base}/agents/${CONCIERGE}/acme?wait=true' -d '{"kind":"user","body":"where is my order?","session":"support"}'`,
    `curl -s '${base}/agents/${CONCIERGE}/globex?wait=true' -d '{"kind":"user","body":"hello","session":"billing"}'`,
    `npm run load:multitenant          # head-of-line inside a session, parallelism across sessions`,
  ],
});
