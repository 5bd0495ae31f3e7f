/**
 * `npm start`: your agents on one Node process, with a SQLite store in ./harness-data, the HTTP
 * API and a chat page on http://127.0.0.1:8484 (PORT changes it). Ctrl-C stops accepting requests,
 * hands in-flight work back to the store (the next start resumes it) and exits.
 */
import { consoleObserver, createRuntime } from "resolute-harness";
import { closeOnSignals, listenFailureHint, mountChatPage, serve } from "resolute-harness/server";
import { openSqliteStore } from "resolute-harness/sqlite";
import { agents } from "./agents.ts";

const runtime = createRuntime({
  agents,
  store: openSqliteStore({ path: "./harness-data/harness.db" }),
  observers: [consoleObserver()], // a line per admission, claim, tool call and settlement
});

const server = await serve(runtime, {
  port: Number(process.env.PORT || 8484),
  // The chat page at /. Like the API, it has no sign-in of its own: the server listens on 127.0.0.1.
  routes: (app) => mountChatPage(app, { agents: Object.keys(agents) }),
}).catch((err: unknown) => {
  // A busy port is one line saying what to do, not a stack trace.
  console.error(listenFailureHint(err) ?? err);
  process.exit(1);
});
// Listening: now run work (what an earlier run left in ./harness-data is resumed first).
await runtime.start();
closeOnSignals(server, runtime);
console.log(`listening on ${server.url} (chat page at /, console at /console, API at /agents/<agent>/<instance>)`);
