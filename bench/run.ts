/**
 * `npm run bench`: runs every benchmark in one process and prints its figures. Pass names to run
 * a subset (e.g. `npm run bench -- overhead`); `iam` (the least-privilege matrix), `capacity`,
 * `first-hour`, `scaling`, `cancel`, `hot-session`, `approvals`, `lean-history`, `lambda`, `memory`,
 * `mcp-server`, `mcp-tools` and `mcp` (the two MCP benches together) run only when named.
 */
import { benchApprovalCosts } from "./approval-costs.ts";
import { benchAws } from "./aws.ts";
import { benchCancelStop } from "./cancel-stop.ts";
import { benchCapacity } from "./capacity.ts";
import { benchHotSession } from "./hot-session.ts";
import { benchHostileSchemas } from "./hostile-schemas.ts";
import { benchFirstHour } from "./first-hour.ts";
import { benchHttp } from "./http.ts";
import { benchIam } from "./iam.ts";
import { benchImportedRebuild } from "./imported-rebuild.ts";
import { benchLambda } from "./lambda.ts";
import { benchMcpTools } from "./mcp-tools.ts";
import { benchMemory } from "./memory.ts";
import { benchLeanHistory } from "./lean-history.ts";
import { benchMcpServer } from "./mcp-server.ts";
import { benchOverhead } from "./overhead.ts";
import { benchScaling } from "./scaling.ts";
import { benchTurnCost } from "./turn-cost.ts";
import { startEmulators } from "../test/support/emulators.ts";

/** A bench of the emulators' endpoints (taken from the environment), run alone: starts them and stops them. */
async function withEmulators(bench: () => Promise<void>): Promise<void> {
  const emulators = await startEmulators();
  Object.assign(process.env, emulators.env);
  try {
    await bench();
  } finally {
    await emulators.stop();
  }
}

const benches: Record<string, () => Promise<void>> = {
  overhead: () => benchOverhead(),
  http: () => benchHttp(),
  aws: () => benchAws(),
  cancel: () => withEmulators(benchCancelStop),
  "hot-session": () => withEmulators(benchHotSession),
  approvals: () => withEmulators(benchApprovalCosts),
  lambda: () => benchLambda(),
  memory: () => benchMemory(),
  "lean-history": () => withEmulators(benchLeanHistory),
  cost: () => benchTurnCost(),
  scaling: () => benchScaling(),
  "hostile-schemas": () => benchHostileSchemas(),
  "imported-rebuild": () => benchImportedRebuild(),
  capacity: () => benchCapacity(),
  "mcp-server": () => benchMcpServer(),
  "first-hour": () => benchFirstHour(),
  "mcp-tools": () => benchMcpTools(),
  // Issue 36's figures in one run: an MCP tool call against a local one, `tools/call` against `?wait=true`.
  mcp: async () => {
    await benchMcpTools();
    await benchMcpServer();
  },
  iam: () => benchIam(),
};

/**
 * Run only when named: `scaling` admits 2,000 submissions twice on the local cloud (about 10
 * minutes); `cancel`, `hot-session`, `approvals` and `lean-history` are part of `aws` too; `lambda` (cold starts,
 * 2 × 45 replies through the local cloud, reads per stream) and `memory` (the soak's mix under
 * every function's memory size) take over 3 minutes each on this 2-core machine; `first-hour` (a
 * build and two project installs) several. `cost` prices
 * their figures when they run in the same process (`npm run bench -- aws lambda memory cost`), the
 * recorded ones otherwise; so does `capacity` (the capacity model, about a minute).
 */
const onlyWhenNamed = new Set(["iam", "capacity", "first-hour", "scaling", "cancel", "hot-session", "approvals", "lean-history", "lambda", "memory", "mcp-server", "mcp-tools", "mcp"]);

const selected = process.argv.slice(2);
for (const [name, run] of Object.entries(benches)) {
  if (selected.length > 0 ? !selected.includes(name) : onlyWhenNamed.has(name)) continue;
  console.log(`\n== ${name}`);
  await run();
}
