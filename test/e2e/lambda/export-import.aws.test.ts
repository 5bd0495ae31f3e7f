/**
 * Export → import in the serverless shape (ADR 0034), on the local cloud (the http and worker
 * functions of `src/lambda/`, DynamoDB Local, fauxqs SQS + S3): `GET …/export` streams through
 * the HTTP function (the large image as a URL, which the client downloads into the export), and
 * the client's import (attachments uploaded first, then `POST …/import` with the records) rebuilds
 * the conversation under another instance: records equal apart from renewed ids, and the worker's
 * model continues on the imported history. Bad input is a 400 `invalid_export`, an import into a
 * session with a conversation a 409, and neither writes anything.
 */
import { randomInt, randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createClient } from "../../../src/client/index.ts";
import type { ExportLine } from "../../../src/protocol/conversation-export.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { pngOfSize } from "../../support/attachment-fixtures.ts";
import { useLocalCloud } from "../../support/local-cloud-suite.ts";

const agentsModule = fileURLToPath(new URL("../../support/local-cloud-fixtures/agents.ts", import.meta.url));
const suite = useLocalCloud({ agentsModule, workers: 1, workerTimeoutMs: 20_000, streamMaxMs: 3_000, httpTimeoutMs: 30_000, sweeperRateMs: false });
const uid = () => randomUUID().slice(0, 8);

/** A record without what an import renews (ids, conversation, session, submission). */
const plain = (r: ConversationRecord) => {
  const { id: _id, conversationId: _c, session: _s, submissionId: _sub, ...rest } = r;
  return r.kind === "conversation_created" ? { ...rest, payload: undefined } : rest;
};

describe("local cloud: export and import", () => {
  it("round-trips a conversation with images into another instance, where the model continues on it", async () => {
    suite.dumpLogsOnFailure();
    const client = createClient({ baseUrl: suite.cloud.url });
    const small = await client.uploadAttachment(pngOfSize(2_000, randomInt(1_000_000)), "image/png");
    const largeBytes = pngOfSize(300_000, randomInt(1_000_000));
    const large = await client.uploadAttachment(largeBytes, "image/png");
    const instance = `exp-${uid()}`;
    const first = await client.dispatchAndWait("recall", instance, { kind: "user", body: "one", attachments: [small, large] });
    expect(first.status).toBe("succeeded");
    expect((await client.dispatchAndWait("recall", instance, { kind: "user", body: "two" })).status).toBe("succeeded");

    // Through the HTTP function as it streams: the large image as a URL.
    const raw = await fetch(`${suite.cloud.url}/agents/recall/${instance}/export`);
    expect(raw.status).toBe(200);
    const rawLines = (await raw.text()).trim().split("\n").map((l) => JSON.parse(l) as ExportLine);
    expect(rawLines.filter((l) => l.type === "attachment").map((l) => [l.digest, l.data === undefined ? "url" : "inline", l.url])).toEqual([
      [small.digest, "inline", undefined],
      [large.digest, "url", `/attachments/${large.digest}?${new URLSearchParams({ agent: "recall", instance, session: "default" })}`],
    ]);

    const lines: ExportLine[] = [];
    for await (const line of client.exportConversation("recall", instance)) lines.push(line);
    expect(lines.filter((l) => l.type === "attachment").every((l) => l.data !== undefined)).toBe(true);
    const target = `imp-${uid()}`;
    const answer = await client.importConversation("recall", target, lines, { session: "restored" });
    const source = await suite.store.readRecords(first.conversationId);
    expect(answer).toMatchObject({ agent: "recall", instance: target, session: "restored", records: source.length, attachments: 2 });
    const copied = await suite.store.readRecords(answer.conversationId);
    expect(copied.map(plain)).toEqual(source.map(plain));
    expect(copied.every((r, i) => r.id !== source[i]!.id && r.conversationId === answer.conversationId)).toBe(true);
    expect(copied.filter((r) => r.submissionId !== undefined).every((r) => r.submissionId !== first.submissionId)).toBe(true);

    const next = await client.dispatchAndWait("recall", target, { kind: "user", body: "three" }, { session: "restored" });
    expect(next.status).toBe("succeeded");
    const reply = (await suite.store.readRecords(answer.conversationId)).filter((r) => r.kind === "assistant_message_completed").at(-1)!;
    expect(JSON.stringify(reply.payload)).toContain("context: one | two | three");

    // Again into the same session: 409, its log unchanged.
    const log = await suite.store.readRecords(answer.conversationId);
    await expect(client.importConversation("recall", target, lines, { session: "restored" })).rejects.toMatchObject({ status: 409, code: "conversation_exists" });
    expect(await suite.store.readRecords(answer.conversationId)).toEqual(log);
  });

  it("refuses a malformed line and an unknown record kind with 400 invalid_export, writing nothing", async () => {
    const client = createClient({ baseUrl: suite.cloud.url });
    const instance = `exp-bad-${uid()}`;
    expect((await client.dispatchAndWait("recall", instance, { kind: "user", body: "only" })).status).toBe("succeeded");
    const text = await (await fetch(`${suite.cloud.url}/agents/recall/${instance}/export`)).text();
    const lines = text.trim().split("\n");
    const unknownKind = JSON.parse(lines[1]!) as { record: { kind: string } };
    unknownKind.record.kind = "telepathy";
    for (const [body, message] of [
      [[lines[0], "{oops", ...lines.slice(2)].join("\n"), "line 2: not JSON"],
      [[lines[0], JSON.stringify(unknownKind), ...lines.slice(2)].join("\n"), 'line 2: unknown record kind "telepathy"'],
    ] as const) {
      const res = await fetch(`${suite.cloud.url}/agents/recall/${instance}-copy/import`, { method: "POST", headers: { "content-type": "application/jsonl" }, body });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ code: "invalid_export", error: expect.stringContaining(message) });
    }
    await expect(suite.store.getConversation({ agent: "recall", instance: `${instance}-copy`, session: "default" })).rejects.toMatchObject({ code: "conversation_not_found" });
  });
});
