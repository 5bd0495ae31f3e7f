/**
 * The GitHub bot (`npm run example -- github-bot`): a webhook channel on http://127.0.0.1:8487.
 * See README.md for the runbook. Environment: PORT (8487), HOST, DATA_DIR
 * (./harness-data/github-bot), LEASE_MS, LOG_LEVEL, GITHUB_WEBHOOK_SECRET (unset = unsigned
 * deliveries accepted), GITHUB_TOKEN (unset = the reply tool is a dry run), GITHUB_API_URL.
 */
import { log, exampleSettings } from "../shared/settings.ts";
import { startExample } from "../shared/start-example.ts";
import { agents, ISSUE_BOT } from "./agents.ts";
import { githubWebhook } from "./webhook.ts";

const settings = exampleSettings("github-bot", 8487);
const secret = process.env.GITHUB_WEBHOOK_SECRET ?? "";
const token = process.env.GITHUB_TOKEN ?? "";

await startExample({
  settings,
  agents,
  model: "local-issue-bot (keyless)",
  routes: (app, runtime) => githubWebhook(runtime, { secret })(app),
  tryLines: (base) => [
    `curl -s ${base}/webhooks/github -H 'X-GitHub-Event: issue_comment' -H 'X-GitHub-Delivery: d-1' \\`,
    `  -H 'content-type: application/json' -d @examples/github-bot/sample-comment.json`,
    `curl -N ${base}/agents/${ISSUE_BOT}/acme~website~42`,
  ],
});
if (secret === "") log("GITHUB_WEBHOOK_SECRET is not set: unsigned deliveries are accepted (local trials only)");
log(token === "" ? "GITHUB_TOKEN is not set: the reply tool is a dry run" : "GITHUB_TOKEN is set: replies are posted to GitHub");
