/**
 * The DynamoDB store against DynamoDB Local (+ fauxqs S3): the shared conformance suite, each
 * case on a fresh table.
 */
import { afterAll, beforeAll } from "vitest";
import type { Store } from "../../../src/store/store.ts";
import { describeStoreConformance } from "../../../src/store/conformance/index.ts";
import { ensureBucket, freshStore, testClients } from "../../support/dynamodb-fixtures.ts";

const clients = testClients();
const disposers = new Map<Store, () => Promise<void>>();

beforeAll(() => ensureBucket(clients.s3));
afterAll(() => {
  clients.dynamo.destroy();
  clients.s3.destroy();
});

describeStoreConformance(
  "dynamodb",
  async (clock) => {
    // With idle sessions listed, as conversation retention runs it (the cases that list them).
    const { store, dispose } = await freshStore(clients, clock, { idleSessions: true });
    disposers.set(store, dispose);
    return store;
  },
  {
    teardown: async (store) => {
      await disposers.get(store)?.();
      disposers.delete(store);
    },
  },
);
