/**
 * IAM on the local cloud (issue 35, ADR 0047): every AWS call a function makes goes through the
 * IAM gate, which evaluates it against that function's role policy from the synthesized template
 * and refuses what the role does not allow as AWS does, so the SDK throws the error it would throw
 * on AWS. The regression that motivated it: ADR 0035's head move needs `dynamodb:ConditionCheckItem`;
 * a stack whose roles lack it now fails on the local cloud with an AccessDenied naming the
 * function, the action and the table, as it would have failed in a user's account.
 */
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { DeleteItemCommand, DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import { ReceiveMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { DeleteObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { describe, expect, it } from "vitest";
import { useLocalCloud } from "../../support/local-cloud-suite.ts";

const agentsModule = fileURLToPath(new URL("../../support/local-cloud-fixtures/agents.ts", import.meta.url));
const knobs = { agentsModule, workers: 1, workerTimeoutMs: 20_000, streamMaxMs: 3_000, httpTimeoutMs: 30_000, sweeperRateMs: false as const, env: { HARNESS_LEASE_MS: "2000" } };

/** SDK clients signed as one function of the cloud (its own key, through the gate). */
function clientsOf(env: Record<string, string>) {
  const config = { region: env.AWS_REGION, credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID!, secretAccessKey: env.AWS_SECRET_ACCESS_KEY! }, maxAttempts: 1 };
  return {
    dynamo: new DynamoDBClient({ ...config, endpoint: env.AWS_ENDPOINT_URL_DYNAMODB }),
    sqs: new SQSClient({ ...config, endpoint: env.AWS_ENDPOINT_URL_SQS }),
    s3: new S3Client({ ...config, endpoint: env.AWS_ENDPOINT_URL_S3, forcePathStyle: true }),
  };
}

describe("the IAM gate of the local cloud", () => {
  const suite = useLocalCloud({ ...knobs, expectDenials: true });

  it("refuses what a function's role does not allow, with the error AWS answers, and lets its own grants through", async () => {
    const { cloud } = suite;
    const key = { pk: { S: `iam-${randomUUID()}` }, sk: { S: "x" } };
    const sweeper = clientsOf(cloud.functionEnv("sweeper"));
    const http = clientsOf(cloud.functionEnv("http"));
    const worker = clientsOf(cloud.functionEnv("worker"));

    // Granted: the sweeper reads items; the worker writes objects.
    await expect(sweeper.dynamo.send(new GetItemCommand({ TableName: cloud.tableName, Key: key }))).resolves.toBeDefined();
    await expect(worker.s3.send(new PutObjectCommand({ Bucket: cloud.bucketName, Key: "blobs/iam-probe", Body: "x" }))).resolves.toBeDefined();

    // Not granted: DeleteItem (no role), the DLQ for the http function, deleting blobs for the worker.
    await expect(sweeper.dynamo.send(new DeleteItemCommand({ TableName: cloud.tableName, Key: key }))).rejects.toMatchObject({
      name: "AccessDeniedException",
      $metadata: { httpStatusCode: 400 },
      message: expect.stringContaining(`is not authorized to perform: dynamodb:DeleteItem on resource: arn:aws:dynamodb:`),
    });
    await expect(http.sqs.send(new ReceiveMessageCommand({ QueueUrl: cloud.deadLetterQueueUrl, WaitTimeSeconds: 0 }))).rejects.toMatchObject({
      $metadata: { httpStatusCode: 400 },
      message: expect.stringContaining("sqs:ReceiveMessage"),
    });
    await expect(worker.s3.send(new DeleteObjectCommand({ Bucket: cloud.bucketName, Key: "blobs/iam-probe" }))).rejects.toMatchObject({
      name: "AccessDenied",
      $metadata: { httpStatusCode: 403 },
    });

    expect(cloud.iam!.denials.map((d) => d.action)).toEqual(["dynamodb:DeleteItem", "sqs:ReceiveMessage", "s3:DeleteObject"]);
    expect(cloud.iam!.denials[0]).toMatchObject({ function: expect.stringMatching(/^HarnessSweeper/), resource: expect.stringContaining(`table/${cloud.tableName}`) });
    for (const c of [sweeper, http, worker]) for (const client of Object.values(c)) client.destroy();
  });
});

describe("a stack whose roles lack dynamodb:ConditionCheckItem (the grant ADR 0035's head move needs)", () => {
  const suite = useLocalCloud({ ...knobs, without: { action: "dynamodb:ConditionCheckItem" }, expectDenials: true });

  it("fails its first turn's settlement with AccessDenied naming the function, the action and the table", { timeout: 90_000 }, async () => {
    suite.dumpLogsOnFailure();
    const res = await fetch(`${suite.cloud.url}/agents/assistant/iam-${randomUUID().slice(0, 8)}`, { method: "POST", body: JSON.stringify({ kind: "user", body: "hello" }) });
    expect(res.status).toBe(202);
    const deadline = Date.now() + 60_000;
    while (!suite.cloud.iam!.denials.some((d) => d.action === "dynamodb:ConditionCheckItem") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    const denial = suite.cloud.iam!.denials.find((d) => d.action === "dynamodb:ConditionCheckItem");
    expect(denial).toMatchObject({ function: expect.stringMatching(/^HarnessWorker/), resource: expect.stringContaining(`table/${suite.cloud.tableName}`) });
    expect(suite.logs.some((l) => l.includes("AccessDenied") && l.includes("dynamodb:ConditionCheckItem"))).toBe(true);
  });
});
