/**
 * SQS's and DynamoDB's limits as the local cloud's functions meet them: refused where AWS refuses,
 * with the error the SDK throws on AWS. fauxqs lets some through, so the functions reach it
 * through `dev/local-cloud/sqs-limits-proxy.ts`; DynamoDB Local refuses each of DynamoDB's by
 * itself, and the second half pins that (an emulator upgrade that dropped one would fail here).
 * What the harness's own SQS adapter sends stays inside them.
 */
import {
  BatchWriteItemCommand,
  CreateTableCommand,
  DeleteTableCommand,
  DynamoDBClient,
  PutItemCommand,
  TransactWriteItemsCommand,
  type TransactWriteItem,
} from "@aws-sdk/client-dynamodb";
import { CreateQueueCommand, DeleteQueueCommand, SendMessageBatchCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SQS_DEFAULT_MAX_MESSAGE_BYTES, startSqsLimitsProxy, type SqsLimitsProxy } from "../../../dev/local-cloud/sqs-limits-proxy.ts";
import { SqsWorkQueue } from "../../../src/sqs/sqs-queue.ts";
import { sessionKeyString } from "../../../src/protocol/dispatch.ts";
import { uid } from "../../support/local-cloud-http.ts";

describe("local cloud: SQS's limits (through the checking proxy)", () => {
  let proxy: SqsLimitsProxy;
  let sqs: SQSClient;
  let queueUrl: string;
  beforeAll(async () => {
    proxy = await startSqsLimitsProxy(process.env.AWS_ENDPOINT_URL_SQS!);
    sqs = new SQSClient({ endpoint: proxy.url, maxAttempts: 1 });
    queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `limits-${uid()}.fifo`, Attributes: { FifoQueue: "true" } }))).QueueUrl!;
  });
  afterAll(async () => {
    await sqs?.send(new DeleteQueueCommand({ QueueUrl: queueUrl })).catch(() => {});
    sqs?.destroy();
    await proxy?.close();
  });
  const send = (body: string, group = "g", dedup = uid()) =>
    sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body, MessageGroupId: group, MessageDeduplicationId: dedup }));

  it("a message of 256 KiB is taken, one byte more is InvalidParameterValue", async () => {
    await expect(send("x".repeat(SQS_DEFAULT_MAX_MESSAGE_BYTES))).resolves.toMatchObject({ MessageId: expect.any(String) });
    await expect(send("x".repeat(SQS_DEFAULT_MAX_MESSAGE_BYTES + 1))).rejects.toMatchObject({
      name: "InvalidParameterValue",
      message: "One or more parameters are invalid. Reason: Message must be shorter than 262144 bytes.",
      $metadata: { httpStatusCode: 400 },
    });
  });

  it("a message group id of 128 characters is taken, 129 is refused", async () => {
    await expect(send("hi", "g".repeat(128))).resolves.toBeDefined();
    await expect(send("hi", "g".repeat(129))).rejects.toMatchObject({ name: "InvalidParameterValue", message: expect.stringMatching(/MessageGroupId/) });
    await expect(send("hi", "g", "d".repeat(129))).rejects.toMatchObject({ name: "InvalidParameterValue", message: expect.stringMatching(/MessageDeduplicationId/) });
  });

  it("SendMessageBatch: 10 entries are taken, 11 are TooManyEntriesInBatchRequest; entries over 256 KiB together are BatchRequestTooLong", async () => {
    const entries = (n: number, size = 10) =>
      Array.from({ length: n }, (_, i) => ({ Id: `e${i}`, MessageBody: "x".repeat(size), MessageGroupId: "g", MessageDeduplicationId: uid() }));
    await expect(sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries(10) }))).resolves.toMatchObject({ Successful: expect.any(Array) });
    await expect(sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries(11) }))).rejects.toMatchObject({
      name: "TooManyEntriesInBatchRequest",
    });
    await expect(sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries(2, 140_000) }))).rejects.toMatchObject({
      name: "BatchRequestTooLong",
    });
  });

  it("the harness's largest doorbell (every id at its longest) is taken", async () => {
    const queue = new SqsWorkQueue({ client: sqs, queueUrl });
    const group = sessionKeyString({ agent: "a".repeat(64), instance: "i".repeat(256), session: "s".repeat(128) });
    const before = Object.values(proxy.refused).reduce((a, b) => a + b, 0);
    await queue.ring({ submissionId: "d".repeat(256), group });
    expect(Object.values(proxy.refused).reduce((a, b) => a + b, 0)).toBe(before);
  });
});

describe("local cloud: DynamoDB's limits (DynamoDB Local refuses each as DynamoDB does)", () => {
  const table = `limits-${uid()}`;
  let dynamo: DynamoDBClient;
  beforeAll(async () => {
    dynamo = new DynamoDBClient({ maxAttempts: 1 });
    await dynamo.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: "PAY_PER_REQUEST",
        AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
        KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
      }),
    );
  });
  afterAll(async () => {
    await dynamo?.send(new DeleteTableCommand({ TableName: table })).catch(() => {});
    dynamo?.destroy();
  });
  const put = (pk: string, size = 10): TransactWriteItem => ({ Put: { TableName: table, Item: { pk: { S: pk }, v: { S: "x".repeat(size) } } } });
  const transact = (items: TransactWriteItem[]) => dynamo.send(new TransactWriteItemsCommand({ TransactItems: items }));
  const validation = (message: RegExp) => ({ name: "ValidationException", message: expect.stringMatching(message), $metadata: { httpStatusCode: 400 } });

  it("a transaction of 100 items commits, 101 is a ValidationException", async () => {
    await expect(transact(Array.from({ length: 100 }, (_, i) => put(`a${uid()}${i}`)))).resolves.toBeDefined();
    await expect(transact(Array.from({ length: 101 }, (_, i) => put(`b${uid()}${i}`)))).rejects.toMatchObject(validation(/less than or equal to 100/));
  });

  it("the same item twice in one transaction is a ValidationException", async () => {
    const pk = `dup-${uid()}`;
    await expect(transact([put(pk), put(pk)])).rejects.toMatchObject(validation(/^Transaction request cannot include multiple operations on one item$/));
  });

  it("a transaction over 4 MB is a ValidationException", async () => {
    await expect(transact(Array.from({ length: 11 }, (_, i) => put(`big${uid()}${i}`, 390_000)))).rejects.toMatchObject(
      validation(/Transaction payload size cannot exceed 4MB/),
    );
  });

  it("an item of 400 KB is a ValidationException", async () => {
    await expect(dynamo.send(new PutItemCommand({ TableName: table, Item: { pk: { S: uid() }, v: { S: "x".repeat(400 * 1024) } } }))).rejects.toMatchObject(
      validation(/^Item size has exceeded the maximum allowed size$/),
    );
  });

  it("BatchWriteItem: 25 items are written, 26 is a ValidationException", async () => {
    const requests = (n: number) => Array.from({ length: n }, (_, i) => ({ PutRequest: { Item: { pk: { S: `w${uid()}${i}` } } } }));
    await expect(dynamo.send(new BatchWriteItemCommand({ RequestItems: { [table]: requests(25) } }))).resolves.toBeDefined();
    await expect(dynamo.send(new BatchWriteItemCommand({ RequestItems: { [table]: requests(26) } }))).rejects.toMatchObject(
      validation(/Too many items requested for the BatchWriteItem call/),
    );
  });
});
