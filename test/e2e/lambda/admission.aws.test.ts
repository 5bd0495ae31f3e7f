/**
 * Admission's checks in the serverless shape: the http function of `src/lambda/` on the local
 * cloud (DynamoDB Local, fauxqs SQS FIFO + S3), reached through the local function URL. Each
 * refusal is a 4xx JSON `{error, code}`, and the table and bucket hold exactly what they held
 * before (a full scan of the table, compared item for item).
 */
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { DynamoDBClient, ScanCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useLocalCloud } from "../../support/local-cloud-suite.ts";

const agentsModule = fileURLToPath(new URL("../../support/local-cloud-fixtures/agents.ts", import.meta.url));
const suite = useLocalCloud({
  agentsModule,
  workers: 1,
  workerTimeoutMs: 20_000,
  streamMaxMs: 3_000,
  httpTimeoutMs: 20_000,
  sweeperRateMs: false,
  env: { HARNESS_LEASE_MS: "3000" },
});
let dynamo: DynamoDBClient;

beforeAll(() => {
  dynamo = new DynamoDBClient({});
});

afterAll(() => {
  dynamo?.destroy();
});

const uid = () => randomUUID().slice(0, 8);

async function post(path: string, body: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${suite.cloud.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: JSON.stringify(body),
  });
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  return { status: res.status, json: await res.json() };
}

/** Every item of the table, sorted: what "the store is unchanged" compares. */
async function tableItems(): Promise<string> {
  const items: unknown[] = [];
  let start: Record<string, any> | undefined;
  do {
    const page = await dynamo.send(new ScanCommand({ TableName: suite.cloud.tableName, ConsistentRead: true, ExclusiveStartKey: start }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return JSON.stringify(items.map((i) => JSON.stringify(i)).sort());
}

/** Posts, expects the refusal, and checks that the table did not change. */
async function refused(path: string, body: unknown, status: number, code: string, message?: RegExp | string) {
  const before = await tableItems();
  const res = await post(path, body);
  expect(res.status, JSON.stringify(res.json)).toBe(status);
  expect(res.json.code).toBe(code);
  if (message) expect(res.json.error).toMatch(message);
  const after = await tableItems();
  if (after !== before) {
    const b = new Set(JSON.parse(before) as string[]);
    const a = new Set(JSON.parse(after) as string[]);
    process.stderr.write(`removed: ${[...b].filter((x) => !a.has(x)).join("\n")}\nadded: ${[...a].filter((x) => !b.has(x)).join("\n")}\n`);
  }
  expect(after, "a refused dispatch writes nothing").toBe(before);
}

describe("local cloud: admission checks", () => {
  it("an invalid resultSchema is a 400 invalid_dispatch with the compiler's message; a valid one runs", async () => {
    suite.dumpLogsOnFailure();
    const instance = `schema-${uid()}`;
    const cases: [unknown, RegExp][] = [
      [[], /must be object,boolean/],
      [{ type: 12 }, /must be equal to one of the allowed values/],
      [{ pattern: "(" }, /pattern "\(" is not supported: missing closing \)/],
      [{ minLength: -1 }, /minLength must be >= 0/],
    ];
    for (const [schema, message] of cases) {
      for (const wait of ["", "?wait=true"]) {
        await refused(`/agents/assistant/${instance}${wait}`, { kind: "user", body: "json please", resultSchema: schema }, 400, "invalid_dispatch", message);
      }
    }
    await expect(suite.store.getConversation({ agent: "assistant", instance, session: "default" })).rejects.toMatchObject({ code: "conversation_not_found" });
    // (waited for: a run still going would change the table under the next test's comparison)
    const ok = await post(`/agents/assistant/${instance}?wait=true`, { kind: "user", body: "json please", resultSchema: { type: "string" } });
    expect(ok.status).toBe(200);
  });

  it("an attachment whose digest the bucket does not hold is a 400 naming it; a stored one is admitted", async () => {
    suite.dumpLogsOnFailure();
    const instance = `attach-${uid()}`;
    const stored = await suite.store.putAttachment("text/plain", new TextEncoder().encode(`notes ${instance}`));
    const missing = `sha256:${"f".repeat(64)}`;
    await refused(
      `/agents/assistant/${instance}`,
      { kind: "user", body: "read this", attachments: [stored, { digest: missing, mediaType: "text/plain", size: 1 }] },
      400,
      "attachment_not_found",
      missing,
    );
    const ok = await post(`/agents/assistant/${instance}?wait=true`, { kind: "user", body: "read this", attachments: [stored] });
    expect(ok.status).toBe(200);
    expect(ok.json.status).toBe("succeeded");
  });

  it("a dispatch id reused for another target is a 409 that writes nothing: no conversation, no stream", async () => {
    suite.dumpLogsOnFailure();
    const [a, b, c] = [`a-${uid()}`, `b-${uid()}`, `c-${uid()}`];
    const dispatchId = `d-${uid()}`;
    const first = await post(`/agents/assistant/${a}?wait=true`, { kind: "user", body: "hello", dispatchId });
    expect(first.status).toBe(200);

    await refused(`/agents/assistant/${b}`, { kind: "user", body: "hello", dispatchId }, 409, "dispatch_conflict");
    await refused(`/agents/assistant/${c}`, { kind: "user", body: "another body", dispatchId }, 409, "dispatch_conflict");
    await refused(`/agents/assistant/${a}`, { kind: "user", body: "hello", session: "other", dispatchId }, 409, "dispatch_conflict");
    for (const instance of [b, c]) {
      const stream = await fetch(`${suite.cloud.url}/agents/assistant/${instance}`);
      expect(stream.status).toBe(404);
      expect(((await stream.json()) as { code: string }).code).toBe("conversation_not_found");
    }
    const again = await post(`/agents/assistant/${a}`, { kind: "user", body: "hello", dispatchId });
    expect(again.status).toBe(202);
    expect(again.json.submissionId).toBe(dispatchId);
  });
});
