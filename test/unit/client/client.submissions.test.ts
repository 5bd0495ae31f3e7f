import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, HarnessHttpError, type HarnessClient } from "../../../src/client/index.ts";
import { startTestServer, type TestServer } from "../../support/test-server.ts";

let h: TestServer;
let client: HarnessClient;
beforeAll(async () => {
  h = await startTestServer();
  client = createClient({ baseUrl: h.url });
});
afterAll(async () => {
  await h?.close();
});

let seq = 0;
const fresh = () => `cs-${++seq}`;
const user = (body: string) => ({ kind: "user" as const, body });

describe("client: the operator's view", () => {
  it("lists a session's submissions page by page and reads one with its attempts", async () => {
    const instance = fresh();
    const ids: string[] = [];
    for (const body of ["a", "b", "c"]) ids.push((await client.dispatchAndWait("assistant", instance, user(body), { session: "s" })).submissionId);

    const first = await client.listSubmissions("assistant", instance, { session: "s", limit: 2 });
    expect(first.submissions.map((s) => s.id)).toEqual([ids[2], ids[1]]);
    const second = await client.listSubmissions("assistant", instance, { session: "s", limit: 2, after: first.next });
    expect(second.submissions.map((s) => s.id)).toEqual([ids[0]]);
    expect(second.next).toBeUndefined();
    expect((await client.listSubmissions("assistant", instance, { session: "s", status: "queued" })).submissions).toEqual([]);
    expect((await client.listSubmissions("assistant", instance)).submissions, "the default session is another one").toEqual([]);

    const one = await client.getSubmission("assistant", instance, ids[0]!);
    expect(one).toMatchObject({ id: ids[0], session: "s", status: "settled", input: user("a"), outcome: { status: "succeeded" } });
    expect(one.attempts).toHaveLength(1);
  });

  it("throws typed errors: 400 invalid_request, 404 submission_not_found", async () => {
    const err = await client.listSubmissions("assistant", fresh(), { limit: 1000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HarnessHttpError);
    expect(err).toMatchObject({ status: 400, code: "invalid_request" });
    const missing = await client.getSubmission("assistant", fresh(), "01ARZ3NDEKTSV4RRFFQ69G5FAV").catch((e: unknown) => e);
    expect(missing).toMatchObject({ status: 404, code: "submission_not_found" });
  });
});
