/**
 * The http function: every route of the Hono app (admission, SSE stream, steer/follow-up) behind
 * one function URL in RESPONSE_STREAM mode. A stream ends itself after HARNESS_STREAM_MAX_MS,
 * before the function timeout (a client's disconnect is invisible on Lambda). It never runs an
 * agent: it knows the agents by name (HARNESS_AGENT_NAMES) and does not bundle the agents module.
 * With an operator token (HARNESS_BEARER_TOKEN) it also serves the console at `/console`.
 */
import { join } from "node:path";
import type { Context, StreamifyHandler } from "aws-lambda";
import { streamHandle } from "hono/aws-lambda";
import { createApp } from "../http/app.ts";
import { mountConsole } from "../console/mount-console.ts";
import { agentNamesFromEnv, LAMBDA_MAX_UPLOAD_BYTES } from "./settings.ts";
import { errorFields, wiring, invocation } from "./wiring.ts";

const h = await wiring(agentNamesFromEnv());
const app = createApp(h.runtime, {
  maxStreamMs: h.settings.streamMaxMs,
  // A `?wait=true` answers before the function timeout ends the request (a cut request would be
  // a 502 for a message that was admitted): hono's adapter hands the invocation's context over.
  timeLeftMs: (c) => (c.env as { context?: Context } | undefined)?.context?.getRemainingTimeInMillis(),
  maxUploadBytes: LAMBDA_MAX_UPLOAD_BYTES,
  pollMs: h.settings.streamPoll.pollMs,
  maxPollMs: h.settings.streamPoll.maxPollMs,
  cors: h.settings.corsOrigins.length > 0 ? { origins: h.settings.corsOrigins } : undefined,
  auth: h.httpAuth,
  // Third parties answering callbacks get their own token, never the API's (the construct's `callbacks`).
  callbacks: h.callbackMiddleware ? { middleware: h.callbackMiddleware } : undefined,
  log: (message, err) => h.logger.error(message, { error: errorFields(err) }),
});
// The console (ADR 0054) where an operator can sign in to it: with the operator's token configured.
if (process.env.HARNESS_BEARER_TOKEN) mountConsole(app);
// The chat page (the construct's `chatPage`): loaded only when served, so other cold starts stay as they were.
if (h.settings.chatPage !== undefined) {
  const { mountChatPage } = await import("../chat-page/mount-chat-page.ts");
  // The construct writes the page's files beside this entry file (`chat-page/`, see src/cdk/chat-page-asset.ts).
  mountChatPage(app, { agents: agentNamesFromEnv(), ...h.settings.chatPage, assetsDir: join(import.meta.dirname, "chat-page") });
}
// hono types the result as a plain handler; at run time it is the streamified one.
const serve = streamHandle(app) as unknown as StreamifyHandler<unknown, void>;

export const handler = awslambda.streamifyResponse(async (event: unknown, responseStream, context: Context) =>
  invocation(h, context, async () => {
    await serve(event, responseStream, context);
  }),
);
