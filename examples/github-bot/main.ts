/**
 * The GitHub bot (`npm run example -- github-bot`): the harness API on http://127.0.0.1:8487
 * (loopback only) and the webhook on its own listener, http://127.0.0.1:8491, the one port to
 * expose (a tunnel). See README.md for the runbook. Environment: PORT (8487), DATA_DIR
 * (./harness-data/github-bot), LEASE_MS, LOG_LEVEL, WEBHOOK_PORT (8491), WEBHOOK_HOST (127.0.0.1),
 * WEBHOOK_HOSTS (a tunnel's host names), GITHUB_WEBHOOK_SECRET, GITHUB_TOKEN (unset = the reply
 * tool is a dry run), ALLOW_UNSIGNED (=1: a token without a secret, for local trials),
 * MAX_DELIVERY_AGE_S (3600), GITHUB_API_URL.
 */
import { isLoopbackHost } from "../../src/http/origin-guard.ts";
import { exampleFail, exampleSettings, log } from "../shared/settings.ts";
import { startExample } from "../shared/start-example.ts";
import { agents, ISSUE_BOT } from "./agents.ts";
import { DEFAULT_MAX_DELIVERY_AGE_S } from "./webhook.ts";
import { startWebhookListener } from "./webhook-listener.ts";

const NAME = "github-bot";
const env = process.env;
const settings = exampleSettings(NAME, 8487);
const secret = env.GITHUB_WEBHOOK_SECRET ?? "";
const token = env.GITHUB_TOKEN ?? "";
const allowUnsigned = env.ALLOW_UNSIGNED === "1";
const webhookPort = env.WEBHOOK_PORT === undefined || env.WEBHOOK_PORT === "" ? 8491 : Number(env.WEBHOOK_PORT);
const maxDeliveryAgeS = env.MAX_DELIVERY_AGE_S ? Number(env.MAX_DELIVERY_AGE_S) : DEFAULT_MAX_DELIVERY_AGE_S;

// The API port serves every harness route without auth (dispatch, streams, cancel): loopback only.
if (!isLoopbackHost(settings.hostname)) {
  exampleFail(NAME, `HOST=${settings.hostname} refused: the harness API port stays on loopback; expose WEBHOOK_PORT (${webhookPort}) instead`);
}
if (settings.corsOrigins.length > 0) exampleFail(NAME, "CORS_ORIGINS refused: no page needs this bot's API, and it has no auth");
if (token !== "" && secret === "" && !allowUnsigned) {
  exampleFail(NAME, "GITHUB_TOKEN is set but GITHUB_WEBHOOK_SECRET is not: anyone who reaches the webhook could make the bot post. Set the secret (or ALLOW_UNSIGNED=1 for a local trial)");
}
if (!Number.isInteger(webhookPort) || webhookPort < 0 || webhookPort > 65535) exampleFail(NAME, `WEBHOOK_PORT must be a port number, got ${env.WEBHOOK_PORT}`);
if (!Number.isFinite(maxDeliveryAgeS) || maxDeliveryAgeS <= 0) exampleFail(NAME, `MAX_DELIVERY_AGE_S must be a positive number, got ${env.MAX_DELIVERY_AGE_S}`);

const webhookHost = env.WEBHOOK_HOST || "127.0.0.1";
const allowedHosts = (env.WEBHOOK_HOSTS ?? "").split(",").map((h) => h.trim()).filter(Boolean);

const { runtime, server } = await startExample({
  settings,
  agents,
  model: "local-issue-bot (keyless)",
  tryLines: (base) => [
    `curl -s http://${webhookHost}:${webhookPort}/webhooks/github -H 'X-GitHub-Event: issue_comment' -H 'X-GitHub-Delivery: d-1' \\`,
    `  -H 'content-type: application/json' -d @examples/github-bot/sample-comment.json`,
    `curl -N ${base}/agents/${ISSUE_BOT}/acme~website~42`,
  ],
});
const webhook = await startWebhookListener(runtime, { secret, maxDeliveryAgeS, port: webhookPort, hostname: webhookHost, allowedHosts });
log(`webhook listening on ${webhook.url}/webhooks/github (this port serves only the webhook and /healthz: expose it, never ${server.url})`);
if (allowedHosts.length > 0) log(`webhook answers Host: ${allowedHosts.join(", ")} (and loopback names)`);
if (secret === "") log("GITHUB_WEBHOOK_SECRET is not set: unsigned deliveries are accepted (local trials only)");
log(token === "" ? "GITHUB_TOKEN is not set: the reply tool is a dry run" : "GITHUB_TOKEN is set: replies are posted to GitHub");
process.once("exit", () => void webhook.close());
