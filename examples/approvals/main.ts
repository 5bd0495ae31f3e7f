/**
 * The approvals example (`npm run example -- approvals`): durable waits for a person and for the
 * outside world (ADR 0025) on http://127.0.0.1:8492. A refund above $100 waits for a person's
 * decision; a shipping label waits for the warehouse's callback; neither holds anything while it
 * waits. Its chat page (http://127.0.0.1:8492/) shows a waiting refund as a card to approve or
 * deny. See README.md for the runbook. Environment: PORT (8492), HOST, DATA_DIR
 * (./harness-data/approvals), LEASE_MS, LOG_LEVEL, APPROVAL_TIMEOUT_MS (24 h).
 *
 * `GET /warehouse/requests` stands in for the warehouse's own system: the label requests the
 * agent handed out, each with the path the warehouse answers at. (A real tool would e-mail them
 * or call the warehouse's API; the callback id is a bearer secret for that one call.)
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { mountChatPage } from "../../src/chat-page/mount-chat-page.ts";
import { isLoopbackHost } from "../../src/http/origin-guard.ts";
import { exampleFail, exampleSettings } from "../shared/settings.ts";
import { startExample } from "../shared/start-example.ts";
import { SUPPORT, supportAgents, type LabelRequest } from "./agents.ts";

const NAME = "approvals";
const settings = exampleSettings(NAME, 8492);
// Every route is open (decisions, callbacks, the warehouse's inbox with its callback ids): loopback only.
if (!isLoopbackHost(settings.hostname)) exampleFail(NAME, `HOST=${settings.hostname} refused: this example has no auth; it listens on loopback only`);
const inbox = join(settings.dataDir, "warehouse-inbox");

await startExample({
  settings,
  agents: supportAgents(inbox),
  model: "local-support (keyless)",
  routes: (app) => {
    // The chat page: a refund waiting for approval shows as a card with Approve / Deny.
    mountChatPage(app, { agents: [SUPPORT], title: "Support (approvals)", placeholder: "refund 240 for order A-17, or: label for order A-17" });
    app.get("/warehouse/requests", (c) => {
      const files = existsSync(inbox) ? readdirSync(inbox).filter((f) => f.endsWith(".json")).sort() : [];
      const requests = files.map((f) => JSON.parse(readFileSync(join(inbox, f), "utf8")) as LabelRequest);
      requests.sort((a, b) => a.requestedAt.localeCompare(b.requestedAt)); // oldest first
      return c.json({ requests });
    });
  },
  tryLines: (base) => [
    `open ${base}/ in a browser: refunds above $100 wait there for your Approve / Deny`,
    `curl -s '${base}/agents/${SUPPORT}/shop' -d '{"kind":"user","body":"refund 240 for order A-17"}'`,
    `npm run harness -- ls ${SUPPORT}/shop --url ${base}        # shows the pending approval and how to decide it`,
    `(see examples/approvals/README.md for the rest)`,
  ],
});
