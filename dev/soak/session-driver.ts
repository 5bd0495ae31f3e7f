/**
 * What both soaks do to a harness over HTTP (`soak.ts`: the embedded server; `cloud-soak.ts`: the
 * local cloud): N sessions × M submissions of mixed work, with live readers, and the read-back of
 * every log at the end. Crashes are the caller's business; this side only retries what a crash
 * cut off, as a client would (same dispatch id).
 */
import { createServer } from "node:net";
import { childSessionOf } from "../../src/client/child-session.ts";
import { createClient, type HarnessClient } from "../../src/client/client.ts";
import { HarnessHttpError } from "../../src/client/http-error.ts";
import type { ConversationRecord, TaskSpawnedPayload } from "../../src/protocol/records.ts";
import type { SubmissionStatus } from "../../src/store/submission.ts";
import type { SessionEvidence } from "./invariants.ts";
import { seededRandom } from "../../src/store/conformance/random-log.ts";
import { childAddress } from "../../src/conversation/task-names.ts";
import { RESEARCHER, researchMessage } from "./soak-agents.ts";
import type { ChildEvidence, FamilyEvidence } from "./subagent-invariants.ts";

/**
 * What one submission asks of the keyless model: a short reply, a tool call, or a slow reply to
 * steer (and, at `subagentRate`, a research request delegated to parallel children).
 */
const MESSAGES = [
  (n: string) => `hello ${n}`,
  (n: string) => `what time is it? ${n}`,
  (n: string) => `slow ${n}`,
] as const;

export interface SessionsOptions {
  url: string;
  /** Instance ids are `<run>-<session index>`. */
  run: string;
  sessions: number;
  submissionsPerSession: number;
  random: () => number;
  /** Epoch ms after which posting gives up (throws). */
  deadline: number;
  /** Share of submissions followed by a manual compaction of the session. */
  compactionRate: number;
  /** Share of slow replies and research requests cancelled while they run (or wait). */
  cancelRate: number;
  /**
   * Share of submissions that delegate to 1–3 parallel `researcher` children (`task` calls); the
   * parent parks `waiting` until they settle. Each is pushed onto `families` once admitted.
   */
  subagentRate: number;
  /** Research submissions admitted so far (the soak's killer looks at them; see `familyPhases`). */
  families?: Family[];
  /** Called with each acknowledged submission (e.g. to ring a duplicate doorbell). */
  onAdmitted?: (submissionId: string, instance: string) => Promise<void>;
}

/** A research submission: a parent that spawns children. */
export interface Family {
  instance: string;
  submissionId: string;
}

export interface SessionsReport {
  sessions: SessionEvidence[];
  steers: number;
  followUps: number;
  /** Manual compactions admitted. */
  compactions: number;
  /** Cancels the harness accepted (200, or 202 while the run stops). */
  cancels: number;
  /** Milliseconds from first POST to the settled outcome, per awaited submission. */
  settleMs: number[];
  /** Epoch ms of the last admission the harness acknowledged (202): the load's end. */
  loadEndedAt: number;
}

/** Runs the sessions to their end (every submission acknowledged, the last of each awaited). */
export async function driveSessions(o: SessionsOptions): Promise<SessionsReport> {
  const client = createClient({ baseUrl: o.url });
  const report: SessionsReport = { sessions: [], steers: 0, followUps: 0, compactions: 0, cancels: 0, settleMs: [], loadEndedAt: 0 };

  /** POSTs until the harness answers below 500 (it may be down for a moment); refusals are returned. */
  async function post(path: string, body: unknown): Promise<Response> {
    for (;;) {
      if (Date.now() > o.deadline) throw new Error(`soak deadline passed while posting to ${path}`);
      try {
        const res = await fetch(`${o.url}${path}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
        if (res.status < 500) return res;
        await res.body?.cancel();
      } catch {
        // down (killed): try again shortly
      }
      await sleep(100);
    }
  }

  /** A live reader: tails the stream, reconnecting from the last id it saw when the server dies. */
  function follow(instance: string, into: ConversationRecord[][]) {
    const seen: ConversationRecord[] = [];
    into.push(seen);
    const stop = new AbortController();
    const done = (async () => {
      while (!stop.signal.aborted) {
        try {
          for await (const record of client.stream("assistant", instance, { after: seen.at(-1)?.id ?? "", signal: stop.signal })) seen.push(record);
          await sleep(200, stop.signal); // idle: look again
        } catch {
          if (stop.signal.aborted) return;
          await sleep(200); // down, or not created yet
        }
      }
    })();
    return {
      stop: async () => {
        stop.abort();
        await done.catch(() => {});
      },
    };
  }

  const workers = Array.from({ length: o.sessions }, async (_, s) => {
    // A generator per session, seeded before the first await: each session's mix is the same
    // from run to run, however the sessions interleave.
    const random = seededRandom(Math.floor(o.random() * 2 ** 31));
    const instance = `${o.run}-${s}`;
    const path = `/agents/assistant/${instance}`;
    const acknowledged: string[] = [];
    const live: ConversationRecord[][] = [];
    const cancelled: string[] = [];
    const evidence: SessionEvidence = { key: `assistant/${instance}/default`, acknowledged, log: [], live, unconfirmed: 0, cancelled };
    report.sessions.push(evidence);
    // Half the sessions have a live reader for the whole run.
    const reader = s % 2 === 0 ? follow(instance, live) : undefined;
    for (let m = 0; m < o.submissionsPerSession; m++) {
      const dispatchId = `${instance}-${m}`;
      const researching = random() < o.subagentRate;
      const text = researching
        ? researchMessage(1 + Math.floor(random() * 3), 200 + Math.floor(random() * 1300), `#${m}`)
        : MESSAGES[Math.floor(random() * MESSAGES.length)]!(`#${m}`);
      const body = { kind: "user", body: text, dispatchId };
      const t0 = performance.now();
      const res = await post(path, body);
      if (res.status !== 202) throw new Error(`${dispatchId}: admission answered ${res.status} ${await res.text()}`);
      const { submissionId } = (await res.json()) as { submissionId: string };
      acknowledged.push(submissionId);
      report.loadEndedAt = Math.max(report.loadEndedAt, Date.now());
      await o.onAdmitted?.(submissionId, instance);
      if (researching) o.families?.push({ instance, submissionId });
      if (body.body.startsWith("slow") && random() < 0.6) {
        // Steer or follow up the slow reply while it runs (409 when it already finished: fine).
        await sleep(random() * 400);
        const route = random() < 0.5 ? "steer" : "followup";
        const injected = await post(`${path}/${route}`, { body: `and keep it short (${m})` });
        if (injected.status === 200) route === "steer" ? report.steers++ : report.followUps++;
        else await injected.body?.cancel();
      }
      if ((body.body.startsWith("slow") || researching) && random() < o.cancelRate) {
        // Cancel it, running, waiting on its children or still queued: 200 (settled cancelled at
        // once; a parent's children are cancelled with it), 202 (the run stops at its next safe
        // point), 409 when it had already settled: all fine. A POST cut by a crash is retried; a
        // cancel is idempotent.
        await sleep(random() * (researching ? 1000 : 300));
        const res = await post(`${path}/submissions/${submissionId}/cancel`, { reason: `soak ${m}` });
        if (res.status === 200 || res.status === 202) {
          report.cancels++;
          if (res.status === 200) cancelled.push(submissionId);
        }
        await res.body?.cancel();
      }
      if (m > 0 && random() < o.compactionRate) {
        // A manual compaction, a submission of its own in the session's order. It has no dispatch
        // id: a POST cut by a crash is not retried (it may have been admitted anyway).
        try {
          const res = await fetch(`${o.url}${path}/compact`, { method: "POST", body: "{}" });
          if (res.status === 202) {
            acknowledged.push(((await res.json()) as { submissionId: string }).submissionId);
            report.loadEndedAt = Math.max(report.loadEndedAt, Date.now());
            report.compactions++;
          } else {
            if (res.status >= 500) evidence.unconfirmed!++;
            await res.body?.cancel();
          }
        } catch {
          evidence.unconfirmed!++;
        }
      }
      // Most submissions are awaited; some are left queued behind the next one (head-of-line).
      if (random() < 0.7 || m === o.submissionsPerSession - 1) {
        for (;;) {
          const waited = await post(`${path}?wait=true`, body);
          await waited.body?.cancel();
          if (waited.status === 200) break;
        }
        report.settleMs.push(performance.now() - t0);
      }
    }
    await reader?.stop();
  });
  try {
    await Promise.all(workers);
  } catch (err) {
    // Say what was left unsettled (the usual cause of a passed deadline), through the listing.
    const stuck: string[] = [];
    for (let s = 0; s < o.sessions; s++) {
      const page = await client.listSubmissions("assistant", `${o.run}-${s}`, {}).catch(() => undefined);
      for (const sub of page?.submissions ?? []) {
        if (sub.status !== "settled") stuck.push(`${sub.id} (${sub.kind}) ${sub.status}, ${sub.attemptCount} attempt(s)${sub.lastError ? `, last error ${sub.lastError}` : ""}`);
      }
    }
    throw new Error(`${(err as Error).message}; unsettled: ${stuck.join("; ") || "none"}`, { cause: err });
  }
  return report;
}

/** Reads every session's whole log back over HTTP into its evidence; counts records and outcomes. */
export async function readBack(url: string, sessions: SessionEvidence[]): Promise<{ records: number; outcomes: Record<string, number> }> {
  const client = createClient({ baseUrl: url });
  let records = 0;
  const outcomes: Record<string, number> = {};
  for (const session of sessions) {
    const instance = session.key.split("/")[1]!;
    const all: ConversationRecord[] = [];
    for await (const record of client.stream("assistant", instance, {})) all.push(record);
    session.log = all;
    records += all.length;
    for (const r of all) {
      if (r.kind !== "submission_settled") continue;
      const outcome = r.payload.status === "succeeded" ? "succeeded" : (r.payload.errorCode ?? "failed");
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    }
  }
  return { records, outcomes };
}

/**
 * Every parent in the sessions' logs (a submission with `task_spawned` records) with its children:
 * each child's session log and each row's status, over HTTP (the sessions' logs read first).
 */
export async function readFamilies(url: string, sessions: readonly SessionEvidence[]): Promise<FamilyEvidence[]> {
  const client = createClient({ baseUrl: url });
  const families: FamilyEvidence[] = [];
  for (const session of sessions) {
    const [agent, instance] = session.key.split("/") as [string, string];
    const spawnedBy = new Map<string, Map<string, TaskSpawnedPayload>>();
    const callsBy = new Map<string, Set<string>>();
    for (const r of session.log) {
      if (r.submissionId === undefined) continue;
      if (r.kind === "assistant_tool_call" && r.payload.toolName === "task") callsBy.set(r.submissionId, (callsBy.get(r.submissionId) ?? new Set()).add(r.payload.callId));
      if (r.kind !== "task_spawned") continue;
      const children = spawnedBy.get(r.submissionId) ?? new Map<string, TaskSpawnedPayload>();
      if (!children.has(r.payload.childSubmissionId)) children.set(r.payload.childSubmissionId, r.payload);
      spawnedBy.set(r.submissionId, children);
    }
    for (const submissionId of new Set([...callsBy.keys(), ...spawnedBy.keys()])) {
      const spawned = spawnedBy.get(submissionId) ?? new Map<string, TaskSpawnedPayload>();
      const children: ChildEvidence[] = [];
      for (const payload of spawned.values()) {
        const child = childSessionOf(payload);
        const log: ConversationRecord[] = [];
        for await (const record of client.stream(child.agent, child.instance, { session: child.session })) log.push(record);
        const status = await statusOf(client, child.agent, child.instance, payload.childSubmissionId);
        children.push({ spawned: payload, key: `${child.agent}/${child.instance}/${child.session}`, log, status });
      }
      // Every child the harness lists for this parent's calls must be one its log names.
      const untracked: string[] = [];
      for (const callId of callsBy.get(submissionId) ?? []) {
        const at = childAddress({ submissionId, instance }, callId);
        const page = await client.listSubmissions(RESEARCHER, at.instance, { session: at.session, limit: 100 }).catch((err: unknown) => {
          if (err instanceof HarnessHttpError && err.status === 404) return { submissions: [] };
          throw err;
        });
        for (const listed of page.submissions) {
          if (listed.parentSubmissionId === submissionId && !spawned.has(listed.id)) untracked.push(listed.id);
        }
      }
      families.push({ key: session.key, submissionId, status: await statusOf(client, agent, instance, submissionId), children, untracked });
    }
  }
  return families;
}

async function statusOf(client: HarnessClient, agent: string, instance: string, id: string): Promise<SubmissionStatus | "missing"> {
  try {
    return (await client.getSubmission(agent, instance, id)).status;
  } catch (err) {
    if (err instanceof HarnessHttpError && err.status === 404) return "missing";
    throw err;
  }
}

/**
 * Where the unsettled research submissions are right now, counted by the parent's status (the
 * killer asks just before a kill, so the report can say which phases the kills hit). Ones seen
 * settled are added to `settled` and not asked again. Best effort: one that does not answer
 * within a second is not counted.
 */
export async function familyPhases(url: string, families: readonly Family[], settled: Set<string>): Promise<Partial<Record<SubmissionStatus, number>>> {
  const client = createClient({ baseUrl: url });
  const phases: Partial<Record<SubmissionStatus, number>> = {};
  const signal = AbortSignal.timeout(1_000);
  await Promise.all(
    families
      .filter((f) => !settled.has(f.submissionId))
      .map(async (family) => {
        try {
          const { status } = await client.getSubmission("assistant", family.instance, family.submissionId, { signal });
          if (status === "settled") settled.add(family.submissionId);
          else phases[status] = (phases[status] ?? 0) + 1;
        } catch {
          // down or slow: not counted
        }
      }),
  );
  return phases;
}

/** p50 / p99 / max of `ms`, rounded. */
export function percentiles(ms: number[]): { p50: number; p99: number; max: number } {
  const sorted = [...ms].sort((a, b) => a - b);
  const pct = (p: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0);
  return { p50: pct(0.5), p99: pct(0.99), max: Math.round(sorted.at(-1) ?? 0) };
}

export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}
