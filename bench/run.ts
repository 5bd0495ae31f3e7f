/**
 * `npm run bench`: runs every benchmark in one process and prints its figures. Pass names to run
 * a subset (e.g. `npm run bench -- overhead`).
 */
import { benchAws } from "./aws.ts";
import { benchHttp } from "./http.ts";
import { benchOverhead } from "./overhead.ts";
import { benchTurnCost } from "./turn-cost.ts";

const benches: Record<string, () => Promise<void>> = {
  overhead: () => benchOverhead(),
  http: () => benchHttp(),
  aws: () => benchAws(),
  cost: () => benchTurnCost(),
};

const selected = process.argv.slice(2);
for (const [name, run] of Object.entries(benches)) {
  if (selected.length > 0 && !selected.includes(name)) continue;
  console.log(`\n== ${name}`);
  await run();
}
