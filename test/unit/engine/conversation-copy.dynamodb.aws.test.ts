/**
 * The forced race of a copy (import, fork) with a dispatch into its target session on DynamoDB
 * Local + fauxqs S3 (issue 33; the cases: test/support/copy-race.ts): the copy's records go
 * under its new conversation id first, the session item is given that id last, so a dispatch
 * meanwhile creates the session's conversation itself and the copy is refused.
 */
import { describe } from "vitest";
import { systemClock } from "../../../src/ports/clock.ts";
import { ensureBucket, freshStore, testClients } from "../../support/dynamodb-fixtures.ts";
import { copyRaceCases } from "../../support/copy-race.ts";

describe("a copy against a dispatch into its target session (DynamoDB store)", () => {
  copyRaceCases(async () => {
    const clients = testClients();
    await ensureBucket(clients.s3);
    return freshStore(clients, systemClock);
  });
});
