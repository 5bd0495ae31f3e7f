/** Two children settling at once wake their parent exactly once, on DynamoDB Local (two store instances, as two Lambdas). */
import { it } from "vitest";
import { systemClock } from "../../src/ports/clock.ts";
import { createDynamoStore } from "../../src/dynamodb/index.ts";
import { raceTwoChildren } from "../support/subagent-race.ts";
import { BUCKET, freshStore, useTestClients } from "../support/dynamodb-fixtures.ts";

const clients = useTestClients();

it("DynamoDB: two children's wakes racing (each twice, from two store instances) requeue and ring the parent once", { timeout: 120_000 }, async () => {
  const { store, tableName, dispose } = await freshStore(clients, systemClock);
  const other = createDynamoStore({ tableName, bucketName: BUCKET, dynamo: clients.dynamo, s3: clients.s3, clock: systemClock });
  try {
    await raceTwoChildren([store, other], systemClock, 10);
  } finally {
    await dispose();
  }
});
