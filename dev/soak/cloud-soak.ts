/**
 * The soak on the local cloud (`npm run soak -- --cloud`): the same sessions of mixed work as the
 * embedded soak (`session-driver.ts`, the agents of `soak-agents.ts`, subagents included), against the serverless shape on DynamoDB Local and fauxqs,
 * while worker processes are `kill -9`-ed at random, duplicate doorbells are sent into the work
 * queue, and a share of DynamoDB calls is answered with a throttle (a proxy in front of the
 * table). At the end the checker reads every log back over HTTP, the rows from the store, and the
 * queues: nothing may be left in either (`invariants.ts`, plus the queues here).
 *
 * By default it runs with the construct's timeouts (worker 15 min, queue visibility 16 min, lease
 * 30 s, a sweep a minute, the sweeper's stale-head threshold): a kill costs what it costs a
 * deployment. Kills alternate between a busy worker (mid-run, settling, handing on) and a
 * container that receives a doorbell and dies before its handler runs (an init failure); after
 * each the session's stall is measured (kill → its next record) and one over
 * {@link MAX_STALL_MS} is a violation. `short: true` (`--short`) shortens every timeout instead.
 */
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { GetQueueAttributesCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { startLocalCloud } from "../local-cloud/local-cloud.ts";
import { startThrottleProxy } from "../local-cloud/throttle-proxy.ts";
import { startEmulators } from "../../test/support/emulators.ts";
import type { Store } from "../../src/store/store.ts";
import type { Submission, SubmissionStatus } from "../../src/store/submission.ts";
import { encodeDoorbell } from "../../src/sqs/doorbell-body.ts";
import { doorbellGroupId } from "../../src/sqs/message-group.ts";
import { createDynamoStore } from "../../src/dynamodb/index.ts";
import { checkInvariants } from "./invariants.ts";
import { driveSessions, familyPhases, percentiles, readBack, readFamilies, sleep, type Family } from "./session-driver.ts";
import { seededRandom } from "../../src/store/conformance/random-log.ts";
import { attemptsOf, drainMsOf, type KillPhases, type SoakReport } from "./report.ts";
import { ASSISTANT, RESEARCHER } from "./soak-agents.ts";
import { checkSubagents, subagentFigures } from "./subagent-invariants.ts";
import { exampleAssembly } from "../local-cloud/cloud-assembly.ts";

export interface CloudSoakOptions {
  sessions: number;
  submissionsPerSession: number;
  /** Mean pause between worker kills (0: never). */
  killEveryMs: number;
  maxCrashes?: number;
  /** Throttle every n-th DynamoDB request (0: none). */
  throttleEvery: number;
  /** Share of admitted submissions that get a duplicate doorbell. */
  duplicateRate: number;
  /** Share of submissions followed by a manual compaction. */
  compactionRate: number;
  /** Share of slow replies and research requests cancelled while they run or wait. */
  cancelRate: number;
  /** Share of submissions that delegate to 1–3 parallel subagents (`soak-agents.ts`). */
  subagentRate: number;
  maxSeconds: number;
  /**
   * Shortened timeouts (worker 20 s, visibility 25 s, lease 2 s, sweep and stale head 2 s) instead
   * of the construct's defaults: a quick run of everything but the stall a kill costs.
   */
  short: boolean;
  workers: number;
  seed: number;
  log?: (line: string) => void;
}

export const DEFAULT_CLOUD_SOAK: CloudSoakOptions = {
  sessions: 6,
  submissionsPerSession: 6,
  killEveryMs: 15_000,
  maxCrashes: 12,
  throttleEvery: 25,
  duplicateRate: 0.3,
  compactionRate: 0.15,
  cancelRate: 0.3,
  subagentRate: 0.2,
  maxSeconds: 900,
  short: false,
  // Lambda gives a doorbell its own container when the others are busy: enough workers that none
  // waits for one (6 sessions, children of a family), or a kill's stall measures the pool, not us.
  workers: 8,
  seed: 1,
};

/** The target: a session whose worker is killed at any point runs again within this (ADR 0028). */
export const MAX_STALL_MS = 90_000;

/** One kill and what it cost its session. */
export interface KillStall {
  kind: "busy" | "before_handler";
  /** The doorbell the killed invocation held. */
  submissionId: string;
  /** Kill → the session's next record (ms); undefined when the session had nothing left to do. */
  stallMs?: number;
}

export interface CloudSoakReport extends SoakReport {
  duplicates: number;
  throttled: number;
  /** Messages left visible in the work queue and the dead-letter queue at the end. */
  leftInQueues: number;
  /** Messages still in flight at the end: doorbells whose invocation died before the handler. */
  inFlightAtEnd: number;
  /** Every kill with the stall it caused. */
  stalls: KillStall[];
}

const UNSETTLED: SubmissionStatus[] = ["queued", "running", "waiting", "terminalizing"];
const AGENTS = fileURLToPath(new URL("./soak-agents.ts", import.meta.url));

export async function runCloudSoak(options: CloudSoakOptions): Promise<CloudSoakReport> {
  const log = options.log ?? (() => {});
  const started = performance.now();
  const deadline = Date.now() + options.maxSeconds * 1000;
  const random = seededRandom(options.seed);
  // The emulators of the test run when there are (AWS_ENDPOINT_URL_*), else our own.
  const emulators = process.env.AWS_ENDPOINT_URL_DYNAMODB ? undefined : await startEmulators();
  if (emulators) Object.assign(process.env, emulators.env);
  const proxy = await startThrottleProxy(process.env.AWS_ENDPOINT_URL_DYNAMODB!);
  const output: string[] = [];
  let crashes = 0;
  // Armed by the killer: the next doorbell received kills its container before the handler.
  let killNextDelivery = false;
  const kills: Kill[] = [];
  const holding = new Map<string, string>();
  const cloud = await startLocalCloud({
    assembly: exampleAssembly(AGENTS, { "harness:agentNames": [ASSISTANT, RESEARCHER].join(",") }).dir,
    workers: options.workers,
    ...(options.short
      ? { workerTimeoutMs: 20_000, queueVisibilityTimeoutMs: 25_000, sweeperRateMs: 2_000 }
      : {}),
    streamMaxMs: 10_000,
    httpTimeoutMs: 30_000,
    env: options.short ? { HARNESS_LEASE_MS: "2000", HARNESS_STALE_QUEUED_MS: "2000" } : {},
    // The throttle proxy stands behind the IAM gate: every call is still checked against its role.
    upstream: { dynamodb: proxy.url },
    beforeInvoke: (event, fn) => {
      const submissionId = (JSON.parse(event.Records[0]?.body ?? "{}") as { submissionId?: string }).submissionId ?? "";
      holding.set(fn.name, submissionId);
      if (!killNextDelivery || !fn.kill("SIGKILL")) return;
      killNextDelivery = false;
      crashes++;
      kills.push(killOf("before_handler", submissionId));
    },
    log: (line, source) => void output.push(`[${source}] ${line}`),
    onError: (err, source) => void output.push(`[event-source ${source}] ${String(err)}`),
  });
  const sqs = new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL_SQS });
  const store = createDynamoStore({ tableName: cloud.tableName, bucketName: cloud.bucketName });
  // What a kill may stall, read at once: the held submission if it was running, queued or
  // settling; if it had settled, its session's next head (a hand-on the kill may have lost).
  function killOf(kind: KillStall["kind"], submissionId: string): Kill {
    const at = Date.now();
    const stalled = (async () => {
      const sub = submissionId ? await store.getSubmission(submissionId).catch(() => undefined) : undefined;
      if (!sub || sub.status === "waiting") return undefined;
      if (sub.status !== "settled") return sub;
      const head = await store.getSessionHead(sub.sessionKey);
      return head && (head.status === "queued" || head.status === "running") ? head : undefined;
    })().catch(() => undefined);
    return { kind, at, submissionId, stalled };
  }
  let duplicates = 0;
  const families: Family[] = [];
  const settledFamilies = new Set<string>();
  const killPhases: KillPhases = { parentWaiting: 0, parentRunning: 0 };
  try {
    proxy.throttleEvery = options.throttleEvery;
    let killing = options.killEveryMs > 0;
    const killer = (async () => {
      while (killing && Date.now() < deadline && crashes < (options.maxCrashes ?? Infinity)) {
        await sleep(options.killEveryMs * (0.5 + random()));
        if (!killing) break;
        const phases = await familyPhases(cloud.url, families, settledFamilies);
        if (kills.length % 2 === 1) {
          // Every other kill: the next container to receive a doorbell dies before its handler.
          killNextDelivery = true;
          continue;
        }
        const busy = cloud.workers.filter((w) => w.busy);
        const victim = busy[Math.floor(random() * busy.length)];
        if (victim?.kill("SIGKILL")) {
          crashes++;
          kills.push(killOf("busy", holding.get(victim.name) ?? ""));
          if (phases.waiting) killPhases.parentWaiting++;
          if (phases.running) killPhases.parentRunning++;
        }
      }
    })();
    let driven: Awaited<ReturnType<typeof driveSessions>>;
    try {
      driven = await driveSessions({
        url: cloud.url,
        run: `cloudsoak${Date.now().toString(36)}`,
        sessions: options.sessions,
        submissionsPerSession: options.submissionsPerSession,
        random,
        deadline,
        compactionRate: options.compactionRate,
        cancelRate: options.cancelRate,
        subagentRate: options.subagentRate,
        families,
        onAdmitted: async (submissionId, instance) => {
          if (random() >= options.duplicateRate) return;
          // A duplicate as a re-ring makes it: a group of its own (ADR 0028). In the session's
          // group it would wait behind any doorbell of that group left in flight by a container
          // killed before its handler, for the queue's whole visibility timeout.
          const group = `assistant/${instance}/default`;
          await sqs.send(
            new SendMessageCommand({
              QueueUrl: cloud.queueUrl,
              MessageBody: encodeDoorbell({ submissionId, group }),
              MessageGroupId: doorbellGroupId(group),
              MessageDeduplicationId: randomUUID(),
            }),
          );
          duplicates++;
        },
      });
    } catch (err) {
      log(`local cloud output (tail):\n${output.slice(-150).join("\n")}`);
      throw err;
    } finally {
      killing = false;
      killNextDelivery = false;
      await killer;
    }
    proxy.throttleEvery = 0;
    const { sessions } = driven;

    // Everything settled: the queues drain (duplicates of settled work are acknowledged). A
    // doorbell whose invocation died before its handler stays in flight until the queue's
    // visibility timeout, blocking nothing (ADR 0028); the rest must go.
    const preHandlerKills = kills.filter((k) => k.kind === "before_handler").length;
    let left = await queued(sqs, [cloud.queueUrl, cloud.deadLetterQueueUrl]);
    for (let waited = 0; (left.visible > 0 || left.inFlight > preHandlerKills) && waited < 90_000; waited += 500) {
      await sleep(500);
      left = await queued(sqs, [cloud.queueUrl, cloud.deadLetterQueueUrl]);
    }
    const leftInQueues = left.visible;
    const { records, outcomes } = await readBack(cloud.url, sessions);
    const familyEvidence = await readFamilies(cloud.url, sessions);
    const unsettled = (await Promise.all(UNSETTLED.map((status) => store.listByStatus(status)))).flat();
    const attempts = await attemptsOf(store, sessions);
    const drainMs = await drainMsOf(store, sessions, driven.loadEndedAt);
    const violations = [...checkInvariants({ sessions, unsettled }), ...checkSubagents(sessions, familyEvidence, families.map((f) => f.submissionId))];
    if (leftInQueues > 0) violations.push(`${leftInQueues} message(s) left in the queues after the run (${left.detail})`);
    if (left.inFlight > preHandlerKills) {
      violations.push(`${left.inFlight} message(s) in flight after the run, more than the ${preHandlerKills} whose container died before the handler`);
    }
    const stalls = await stallsOf(store, kills);
    for (const k of stalls) {
      if (k.stallMs !== undefined && k.stallMs > MAX_STALL_MS) {
        violations.push(`a kill (${k.kind}, holding ${k.submissionId}) stalled its session for ${Math.round(k.stallMs / 1000)} s (target ${MAX_STALL_MS / 1000} s)`);
      }
    }
    if (violations.length > 0) log(`local cloud output (tail):\n${output.slice(-150).join("\n")}`);
    return {
      violations,
      submissions: sessions.reduce((n, s) => n + s.acknowledged.length, 0),
      crashes,
      steersDelivered: driven.steers,
      compactions: driven.compactions,
      cancels: driven.cancels,
      followUpsDelivered: driven.followUps,
      records,
      outcomes,
      attempts,
      settleMs: percentiles(driven.settleMs),
      subagents: subagentFigures(familyEvidence, sessions),
      killPhases,
      drainMs,
      seconds: Math.round((performance.now() - started) / 100) / 10,
      duplicates,
      throttled: proxy.throttled,
      leftInQueues,
      inFlightAtEnd: left.inFlight,
      stalls,
    };
  } finally {
    await cloud.stop();
    await proxy.close();
    sqs.destroy();
    await emulators?.stop();
  }
}

/** Messages in the queues, visible and in flight. */
async function queued(sqs: SQSClient, urls: string[]): Promise<{ visible: number; inFlight: number; detail: string }> {
  const n = { visible: 0, inFlight: 0, detail: "" };
  for (const url of urls) {
    const out = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"] }),
    );
    const visible = Number(out.Attributes?.ApproximateNumberOfMessages ?? 0);
    const inFlight = Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
    n.visible += visible;
    n.inFlight += inFlight;
    n.detail += `${n.detail ? "; " : ""}${url.split("/").pop()}: ${visible} visible, ${inFlight} in flight`;
  }
  return n;
}

/** One kill, and the submission it may have stalled (read right after it). */
interface Kill {
  kind: KillStall["kind"];
  at: number;
  submissionId: string;
  stalled: Promise<Submission | undefined>;
}

/**
 * What each kill cost: from the kill to the next record of the submission it may have stalled
 * (running, queued or settling at the kill; a waiting parent or a settled session had nothing
 * to stall).
 */
async function stallsOf(store: Store, kills: readonly Kill[]): Promise<KillStall[]> {
  const out: KillStall[] = [];
  for (const kill of kills) {
    const stalled = await kill.stalled;
    if (!stalled) {
      out.push({ kind: kill.kind, submissionId: kill.submissionId });
      continue;
    }
    const next = (await store.readRecords(stalled.conversationId)).find((r) => r.submissionId === stalled.id && Date.parse(r.time) > kill.at);
    out.push({ kind: kill.kind, submissionId: stalled.id, ...(next ? { stallMs: Date.parse(next.time) - kill.at } : {}) });
  }
  return out;
}
