/**
 * The triage example (`npm run example -- triage`): structured results with corrective turns, and
 * a parent that delegates to a durable child through the `task` tool, on http://127.0.0.1:8486.
 * See README.md for the runbook. Environment: PORT (8486), HOST, DATA_DIR
 * (./harness-data/triage), LEASE_MS, LOG_LEVEL, RESEARCH_MS (1500): how long the researcher reads.
 */
import { exampleSettings } from "../shared/settings.ts";
import { startExample } from "../shared/start-example.ts";
import { agents, subagents, TRIAGE, TRIAGE_SCHEMA } from "./agents.ts";

const schema = JSON.stringify(TRIAGE_SCHEMA);

await startExample({
  settings: exampleSettings("triage", 8486),
  agents,
  subagents,
  model: "local-triage + local-researcher (keyless)",
  tryLines: (base) => [
    `SCHEMA='${schema}'`,
    `curl -s '${base}/agents/${TRIAGE}/desk?wait=true' -d '{"kind":"user","body":"urgent: checkout is down","resultSchema":'"$SCHEMA"'}'`,
    `curl -s '${base}/agents/${TRIAGE}/desk?wait=true' -d '{"kind":"user","body":"please research the export error","resultSchema":'"$SCHEMA"'}'`,
    `(see examples/triage/README.md for the rest)`,
  ],
});
