/**
 * A bounded load run against the multitenant example (`npm run load:multitenant`, or
 * `node examples/multitenant/load.ts`): N messages into each of three sessions (acme/support,
 * acme/billing, globex/support), admitted in order per session and all sessions at once, then
 * figures (as a user of each tenant: a token from the example's `POST /dev/token`): each message's admitted → settled time (head-of-line inside a session), the wall
 * time against the serial sum (parallelism across sessions), and the order of settlements.
 *
 *   --url URL         the example's base URL (default HARNESS_URL, else http://127.0.0.1:$PORT,
 *                     PORT defaulting to the example's 8489; loopback only)
 *   --messages N      messages per session (default 2, at most 20)
 *   --timeout-ms MS   give up after this long (default 30000, at most 120000)
 *   --json            print the figures as JSON (for scripts and tests)
 *
 * Exit code: 0 when every message settled succeeded in admission order per session, 1 if not,
 * 2 for bad arguments.
 */
import { parseArgs } from "node:util";

const SESSIONS = [
  { tenant: "acme", session: "support" },
  { tenant: "acme", session: "billing" },
  { tenant: "globex", session: "support" },
] as const;

interface Message {
  tenant: string;
  session: string;
  index: number;
  dispatchId: string;
  body: string;
  admittedAt: number;
  settledAt?: number;
  status?: string;
}

interface RunSpan {
  submissionId: string;
  /** The first record the run wrote (its assistant message start). */
  startedAt: number;
  settledAt: number;
}

const usage = (message: string): never => {
  console.error(`load: ${message}\nusage: node examples/multitenant/load.ts [--url URL] [--messages N] [--timeout-ms MS] [--json]`);
  process.exit(2);
};

const { values } = parseArgs({
  options: {
    url: { type: "string", default: process.env.HARNESS_URL || `http://127.0.0.1:${process.env.PORT || 8489}` },
    messages: { type: "string", default: "2" },
    "timeout-ms": { type: "string", default: "30000" },
    json: { type: "boolean", default: false },
  },
});
const base = values.url.replace(/\/$/, "");
const perSession = Number(values.messages);
const timeoutMs = Number(values["timeout-ms"]);
let host = "";
try {
  host = new URL(base).hostname;
} catch {
  usage(`--url is not a URL: ${base}`);
}
if (!["127.0.0.1", "localhost", "[::1]"].includes(host)) usage(`--url must be a loopback address (this is a load generator), got ${host}`);
if (!Number.isInteger(perSession) || perSession < 1 || perSession > 20) usage("--messages must be 1 to 20");
if (!Number.isInteger(timeoutMs) || timeoutMs < 1000 || timeoutMs > 120_000) usage("--timeout-ms must be 1000 to 120000");

const deadline = AbortSignal.timeout(timeoutMs);
const run = Date.now().toString(36);
const started = performance.now();
const since = () => Math.round(performance.now() - started);

async function post(path: string, body: unknown, token?: string): Promise<{ status: number; json: Record<string, unknown> }> {
  const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` };
  const res = await fetch(`${base}${path}`, { method: "POST", headers, body: JSON.stringify(body), signal: deadline });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/** A token for a user of each tenant, from the example's dev issuer. */
const tokens = new Map<string, string>();
async function tokenOf(tenant: string): Promise<string> {
  let token = tokens.get(tenant);
  if (token === undefined) {
    const minted = await post("/dev/token", { tenant, user: `load-${tenant}` });
    if (minted.status !== 201 || typeof minted.json.token !== "string") throw new Error(`a token for ${tenant} answered ${minted.status}: ${JSON.stringify(minted.json)}`);
    token = minted.json.token;
    tokens.set(tenant, token);
  }
  return token;
}

/** Admits a session's messages one after another (their order is the queue's order), then waits for each. */
async function driveSession(tenant: string, session: string): Promise<Message[]> {
  const messages: Message[] = [];
  const token = await tokenOf(tenant);
  for (let index = 1; index <= perSession; index++) {
    const dispatchId = `load-${run}-${tenant}-${session}-${index}`;
    const body = { kind: "user", body: `message ${index} of ${perSession} for ${tenant}/${session}`, session, dispatchId };
    const admitted = await post(`/agents/concierge/${tenant}`, body, token);
    if (admitted.status !== 202) throw new Error(`admission of ${dispatchId} answered ${admitted.status}: ${JSON.stringify(admitted.json)}`);
    messages.push({ tenant, session, index, dispatchId, body: body.body, admittedAt: since() });
  }
  // The same dispatch again with ?wait=true is a replay that blocks until the settlement.
  await Promise.all(
    messages.map(async (m) => {
      const waited = await post(`/agents/concierge/${tenant}?wait=true`, { kind: "user", body: m.body, session, dispatchId: m.dispatchId }, token);
      if (waited.status !== 200) throw new Error(`waiting for ${m.dispatchId} answered ${waited.status}: ${JSON.stringify(waited.json)}`);
      m.settledAt = since();
      m.status = String(waited.json.status);
    }),
  );
  return messages;
}

/** Each run's span from the session's log (the server's clock): first assistant record → settlement. */
async function spans(tenant: string, session: string): Promise<RunSpan[]> {
  const res = await fetch(`${base}/agents/concierge/${tenant}?session=${session}`, { headers: { authorization: `Bearer ${await tokenOf(tenant)}` }, signal: deadline });
  const records = (await res.text())
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => JSON.parse(line.slice(6)) as { kind: string; submissionId?: string; time: string });
  const out: RunSpan[] = [];
  for (const r of records) {
    if (!r.submissionId?.startsWith(`load-${run}-`)) continue;
    let span = out.find((s) => s.submissionId === r.submissionId);
    if (r.kind === "assistant_message_started" && span === undefined) {
      span = { submissionId: r.submissionId, startedAt: Date.parse(r.time), settledAt: NaN };
      out.push(span);
    }
    if (r.kind === "submission_settled" && span !== undefined) span.settledAt = Date.parse(r.time);
  }
  return out;
}

try {
  const bySession = await Promise.all(SESSIONS.map((s) => driveSession(s.tenant, s.session)));
  const wallMs = since();
  const runs = await Promise.all(SESSIONS.map((s) => spans(s.tenant, s.session)));
  const messages = bySession.flat();

  // Inside a session: runs in admission order, each starting after the previous settled.
  const ordered = bySession.every((ms, i) => {
    const order = runs[i]!.map((r) => r.submissionId);
    return JSON.stringify(order) === JSON.stringify(ms.map((m) => m.dispatchId));
  });
  const overlapsInSession = runs.flatMap((rs) => rs.slice(1).filter((r, i) => r.startedAt < rs[i]!.settledAt)).length;
  // Across sessions: the first runs of every session were in flight at the same moment.
  const firsts = runs.map((rs) => rs[0]!);
  const parallel = Math.max(...firsts.map((r) => r.startedAt)) < Math.min(...firsts.map((r) => r.settledAt));
  const runMs = runs.flat().map((r) => r.settledAt - r.startedAt);
  const serialMs = runMs.reduce((a, b) => a + b, 0);
  const succeeded = messages.every((m) => m.status === "succeeded");
  const ok = succeeded && ordered && overlapsInSession === 0;

  const figures = {
    url: base,
    sessions: SESSIONS.length,
    messagesPerSession: perSession,
    wallMs,
    serialMs,
    meanRunMs: Math.round(serialMs / runMs.length),
    orderedPerSession: ordered,
    overlapsInSession,
    sessionsRanInParallel: parallel,
    messages: messages.map((m) => ({
      session: `${m.tenant}/${m.session}`,
      index: m.index,
      status: m.status,
      admittedToSettledMs: m.settledAt! - m.admittedAt,
    })),
    runs: runs.flat(),
  };
  if (values.json) {
    console.log(JSON.stringify(figures));
  } else {
    console.log(`multitenant load: ${SESSIONS.length} sessions × ${perSession} messages against ${base}`);
    console.log("session          #   admitted → settled");
    for (const m of figures.messages) {
      const note = m.index > 1 ? "  (queued behind the one before: head-of-line)" : "";
      console.log(`${m.session.padEnd(16)} ${String(m.index).padStart(2)}   ${String(m.admittedToSettledMs).padStart(6)} ms  ${m.status}${note}`);
    }
    console.log(
      `wall ${wallMs} ms for ${runMs.length} runs of ≈${figures.meanRunMs} ms (${serialMs} ms if run one at a time): ` +
        (parallel ? "the sessions ran in parallel" : "the sessions did NOT overlap"),
    );
    console.log(
      ordered && overlapsInSession === 0
        ? "every session ran its messages one at a time, in admission order"
        : `ORDER VIOLATED: ordered=${ordered}, overlapping runs in a session=${overlapsInSession}`,
    );
  }
  process.exit(ok ? 0 : 1);
} catch (err) {
  console.error(`load: ${deadline.aborted ? `gave up after ${timeoutMs} ms against ${base}` : failure(err)}`);
  process.exit(1);
}

/** One line for what went wrong; a server that is not there is named, with how to point elsewhere. */
function failure(err: unknown): string {
  if (err instanceof TypeError && err.message === "fetch failed") {
    const cause = err.cause instanceof Error ? err.cause.message : "no answer";
    return `cannot reach the multitenant example at ${base} (${cause}): start it with \`npm run example -- multitenant\`, or point this at it with PORT=, HARNESS_URL= or --url`;
  }
  return err instanceof Error ? err.message : String(err);
}
