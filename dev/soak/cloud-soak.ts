/**
 * The soak on the local cloud (`npm run soak -- --cloud`): the same sessions of mixed work as the
 * embedded soak (`session-driver.ts`, the agents of `soak-agents.ts`, subagents included), against the serverless shape on DynamoDB Local and fauxqs,
 * while worker processes are `kill -9`-ed at random, duplicate doorbells are sent into the work
 * queue, and a share of DynamoDB calls is answered with a throttle (a proxy in front of the
 * table). At the end the checker reads every log back over HTTP, the rows from the store, and the
 * queues: nothing may be left in either (`invariants.ts`, plus the queues here).
 */
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { GetQueueAttributesCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { startLocalCloud } from "../local-cloud/local-cloud.ts";
import { startThrottleProxy } from "../local-cloud/throttle-proxy.ts";
import { startEmulators } from "../../test/support/emulators.ts";
import type { SubmissionStatus } from "../../src/store/submission.ts";
import { encodeDoorbell } from "../../src/sqs/doorbell-body.ts";
import { messageGroupId } from "../../src/sqs/message-group.ts";
import { createDynamoStore } from "../../src/dynamodb/index.ts";
import { checkInvariants } from "./invariants.ts";
import { driveSessions, familyPhases, percentiles, readBack, readFamilies, sleep, type Family } from "./session-driver.ts";
import { seededRandom } from "../../src/store/conformance/random-log.ts";
import { attemptsOf, type KillPhases, type SoakReport } from "./report.ts";
import { ASSISTANT, RESEARCHER } from "./soak-agents.ts";
import { checkSubagents, subagentFigures } from "./subagent-invariants.ts";

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
  leaseMs: number;
  workers: number;
  seed: number;
  log?: (line: string) => void;
}

export const DEFAULT_CLOUD_SOAK: CloudSoakOptions = {
  sessions: 8,
  submissionsPerSession: 8,
  killEveryMs: 6_000,
  throttleEvery: 25,
  duplicateRate: 0.3,
  compactionRate: 0.15,
  cancelRate: 0.3,
  subagentRate: 0.2,
  maxSeconds: 180,
  leaseMs: 2_000,
  workers: 2,
  seed: 1,
};

export interface CloudSoakReport extends SoakReport {
  duplicates: number;
  throttled: number;
  /** Messages left in the work queue and the dead-letter queue at the end. */
  leftInQueues: number;
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
  const cloud = await startLocalCloud({
    agentsModule: AGENTS,
    agentNames: [ASSISTANT, RESEARCHER],
    workers: options.workers,
    // A killed worker's message stays invisible for the visibility timeout, and its session's FIFO
    // group waits behind it: short timeouts (the soak's replies take a few seconds) keep a kill
    // from stalling its session for a minute.
    workerTimeoutMs: 20_000,
    queueVisibilityTimeoutMs: 25_000,
    streamMaxMs: 10_000,
    httpTimeoutMs: 30_000,
    sweeperRateMs: 2_000,
    env: {
      HARNESS_LEASE_MS: String(options.leaseMs),
      HARNESS_STALE_QUEUED_MS: "2000",
      AWS_ENDPOINT_URL_DYNAMODB: proxy.url,
    },
    log: (line, source) => void output.push(`[${source}] ${line}`),
    onError: (err, source) => void output.push(`[event-source ${source}] ${String(err)}`),
  });
  const sqs = new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL_SQS });
  const store = createDynamoStore({ tableName: cloud.tableName, bucketName: cloud.bucketName });
  let crashes = 0;
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
        const busy = cloud.workers.filter((w) => w.busy);
        const victim = busy[Math.floor(random() * busy.length)];
        if (victim?.kill("SIGKILL")) {
          crashes++;
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
          // A duplicate as SQS's at-least-once delivery or a re-ring would make it.
          const group = `assistant/${instance}/default`;
          await sqs.send(
            new SendMessageCommand({
              QueueUrl: cloud.queueUrl,
              MessageBody: encodeDoorbell({ submissionId, group }),
              MessageGroupId: messageGroupId(group),
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
      await killer;
    }
    proxy.throttleEvery = 0;
    const { sessions } = driven;

    // Everything settled: the queues drain (duplicates of settled work are acknowledged).
    let leftInQueues = await queued(sqs, [cloud.queueUrl, cloud.deadLetterQueueUrl]);
    for (let waited = 0; leftInQueues > 0 && waited < 60_000; waited += 500) {
      await sleep(500);
      leftInQueues = await queued(sqs, [cloud.queueUrl, cloud.deadLetterQueueUrl]);
    }
    const { records, outcomes } = await readBack(cloud.url, sessions);
    const familyEvidence = await readFamilies(cloud.url, sessions);
    const unsettled = (await Promise.all(UNSETTLED.map((status) => store.listByStatus(status)))).flat();
    const attempts = await attemptsOf(store, sessions);
    const violations = [...checkInvariants({ sessions, unsettled }), ...checkSubagents(sessions, familyEvidence, families.map((f) => f.submissionId))];
    if (leftInQueues > 0) violations.push(`${leftInQueues} message(s) left in the queues after the run`);
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
      seconds: Math.round((performance.now() - started) / 100) / 10,
      duplicates,
      throttled: proxy.throttled,
      leftInQueues,
    };
  } finally {
    await cloud.stop();
    await proxy.close();
    sqs.destroy();
    await emulators?.stop();
  }
}

/** Messages in the queues, visible or in flight. */
async function queued(sqs: SQSClient, urls: string[]): Promise<number> {
  let n = 0;
  for (const url of urls) {
    const out = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"] }),
    );
    n += Number(out.Attributes?.ApproximateNumberOfMessages ?? 0) + Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
  }
  return n;
}
