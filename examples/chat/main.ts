/**
 * The chat page (`npm run example -- chat`): open http://127.0.0.1:8485 in a browser. The page the
 * package serves for `harness dev` (src/chat-page), here over one keyless agent: it streams the
 * conversation live with markdown, switches sessions with a full replay, steers, cancels and
 * compacts runs and lists the session's submissions.
 * Environment: PORT (8485), HOST, DATA_DIR (./harness-data/chat), LEASE_MS, LOG_LEVEL,
 * CORS_ORIGINS, RESEARCH_MS (how long the research tool takes, default 6000).
 */
import { mountChatPage } from "../../src/chat-page/mount-chat-page.ts";
import { exampleFail, exampleSettings } from "../shared/settings.ts";
import { startExample } from "../shared/start-example.ts";
import { CHAT, chatAgents } from "./agents.ts";

const settings = exampleSettings("chat", 8485);
const researchMs = Number(process.env.RESEARCH_MS || 6_000);
if (!Number.isInteger(researchMs) || researchMs < 0) exampleFail("chat", `RESEARCH_MS must be a number of ms, got ${process.env.RESEARCH_MS}`);

await startExample({
  settings,
  agents: chatAgents({ researchMs, deltaDelayMs: 25 }),
  routes: (app) => mountChatPage(app, { agents: [CHAT], placeholder: "Say something, or: research the history of tea" }),
  model: "local-chat (keyless)",
  tryLines: (base) => [
    `open ${base}/ in a browser (?instance=<name> for another instance)`,
    `curl -s '${base}/agents/${CHAT}/demo?wait=true' -d '{"kind":"user","body":"research the history of tea"}'`,
    `curl -s '${base}/agents/${CHAT}/demo/submissions'`,
  ],
});
