/**
 * The scheduler (`npm run example -- scheduler`): one signal per wall-clock window into
 * `reporter/daily`, on http://127.0.0.1:8488. See README.md for the runbook. Environment: PORT
 * (8488), HOST, DATA_DIR (./harness-data/scheduler), LEASE_MS, LOG_LEVEL, TICK_SECONDS (30, at
 * least 1): the window length.
 */
import { exampleFail, exampleSettings, log } from "../shared/settings.ts";
import { startExample } from "../shared/start-example.ts";
import { scheduledDispatch } from "../../src/runtime/scheduled-dispatch.ts";
import { agents, REPORTER } from "./agents.ts";
import { startTicker } from "./window-ticker.ts";

const SCHEDULE = "standup";
const INSTANCE = "daily";

const settings = exampleSettings("scheduler", 8488);
const tickSeconds = Number(process.env.TICK_SECONDS || 30);
if (!Number.isInteger(tickSeconds) || tickSeconds < 1) exampleFail("scheduler", `TICK_SECONDS must be a whole number of seconds, at least 1; got ${process.env.TICK_SECONDS}`);

const { runtime } = await startExample({
  settings,
  agents,
  model: "local-reporter (keyless)",
  tryLines: (base) => [`curl -N ${base}/agents/${REPORTER}/${INSTANCE}      # one report per ${tickSeconds} s window`],
});

const stop = startTicker({
  everyMs: tickSeconds * 1000,
  fire: async (start) => {
    const window = new Date(start).toISOString();
    // The same dispatch the construct's EventBridge schedules make (src/runtime/scheduled-dispatch.ts).
    const request = scheduledDispatch({
      schedule: SCHEDULE,
      agent: REPORTER,
      instance: INSTANCE,
      body: `The ${SCHEDULE} window starting ${window} is open: write the report.`,
      scheduledTime: start,
    });
    const dispatchId = request.dispatchId!;
    const admitted = await runtime.dispatch(request);
    log(
      admitted.replayed
        ? `window ${window} was already fired (another replica or an earlier run): ${dispatchId}`
        : `fired window ${window}: ${dispatchId}`,
    );
  },
  onError: (err, start) => log(`firing window ${new Date(start).toISOString()} failed (the next window tries again): ${String(err)}`),
});
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
