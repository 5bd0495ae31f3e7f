/**
 * The review's engine findings (issue 14) in the serverless shape: DynamoDB Local and fauxqs S3,
 * one store per Lambda, faults injected into a store's SDK client (a log batch is one PutItem).
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { createDynamoClient, createDynamoStore } from "../../src/dynamodb/index.ts";
import { BUCKET, freshStore, useTestClients } from "../support/dynamodb-fixtures.ts";
import { describeReviewFindings, type FaultyStore, writeFaults } from "./review-findings.cases.ts";

const clients = useTestClients();

/** A client whose puts of log batches (`L#…` items) a case can hold, fail once or hang. */
function faultyPuts(): { dynamo: DynamoDBClient; control: Omit<FaultyStore, "store"> } {
  const dynamo = createDynamoClient({}, { baseDelayMs: 5, throttlingBaseDelayMs: 10 });
  // A client error the SDK does not retry.
  const faults = writeFaults(() =>
    Object.assign(new Error("The request was refused."), { name: "ValidationException", $fault: "client", $metadata: { httpStatusCode: 400 } }),
  );
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const sk = (args.input as { Item?: { sk?: { S?: string } } }).Item?.sk?.S;
      if (context.commandName !== "PutItemCommand" || !sk?.startsWith("L#")) return next(args);
      return faults.write(() => next(args));
    },
    { step: "initialize", name: "logWriteFaults" },
  );
  return { dynamo, control: faults.control };
}

describeReviewFindings("dynamodb, one store per Lambda", async (clock) => {
  const made = await freshStore(clients, clock);
  const owned: DynamoDBClient[] = [];
  const open = (dynamo: DynamoDBClient) => createDynamoStore({ tableName: made.tableName, bucketName: BUCKET, dynamo, s3: clients.s3, clock });
  return {
    store: () => open(clients.dynamo),
    faulty: () => {
      const { dynamo, control } = faultyPuts();
      owned.push(dynamo);
      return { store: open(dynamo), ...control };
    },
    dispose: async () => {
      for (const dynamo of owned) dynamo.destroy();
      await made.dispose();
    },
  };
});
