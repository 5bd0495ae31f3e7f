/**
 * Forking on DynamoDB (DynamoDB Local + fauxqs S3; ADR 0034): the copied prefix holds the source
 * session's settlement records, and the fork's own first submission must still run and settle
 * there (a log's fence epochs count its own session's claims: a copied settlement of another
 * session's submission must not raise them, which once left every attempt of the fork refused).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scriptedModel } from "../../../src/agent/scripted-model.ts";
import { systemClock } from "../../../src/ports/clock.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import type { Store } from "../../../src/store/store.ts";
import { ensureBucket, freshStore, testClients } from "../../support/dynamodb-fixtures.ts";

describe("fork on DynamoDB", () => {
  let store: Store;
  let runtime: Runtime;
  let dispose: () => Promise<void>;
  const model = scriptedModel([[{ text: "first answer" }], [{ text: "second answer" }], [{ text: "answer to the edit" }], [{ text: "and on" }]]);

  beforeAll(async () => {
    const clients = testClients();
    await ensureBucket(clients.s3);
    ({ store, dispose } = await freshStore(clients, systemClock));
    runtime = createRuntime({
      agents: { chat: { initialize: () => ({ model: model.model, streamFn: model.streamFn }) } },
      store,
      flushPolicy: { bytes: 0, intervalMs: 0 },
      onObserverError: () => {},
    });
    await runtime.start();
  });
  afterAll(async () => {
    await runtime.close();
    await dispose();
  });

  const textOf = (m: { content: unknown }) =>
    typeof m.content === "string" ? m.content : (m.content as { text?: string }[]).map((c) => c.text ?? "").join("");

  it("the forked session runs its edit on the copied prefix, and runs on after it", async () => {
    const first = await runtime.dispatch({ agent: "chat", instance: "t", message: { kind: "user", body: "first question" } });
    expect((await runtime.wait(first.submissionId)).status).toBe("succeeded");
    const second = await runtime.dispatch({ agent: "chat", instance: "t", message: { kind: "user", body: "second question" } });
    expect((await runtime.wait(second.submissionId)).status).toBe("succeeded");
    const forkPoint = (await store.readRecords(first.conversationId)).find((r) => r.kind === "submission_settled" && r.submissionId === first.submissionId)!;

    const forked = await runtime.fork({ agent: "chat", instance: "t", fromRecordId: forkPoint.id, targetSession: "edited", message: { kind: "user", body: "edited second question" } });
    const settled = await runtime.wait(forked.submissionId!);
    expect(settled.status, settled.error).toBe("succeeded");
    expect((await store.getSubmission(forked.submissionId!)).attemptCount).toBe(1);
    const sent = model.calls[2]!.messages.filter((m) => m.role === "user" || m.role === "assistant").map((m) => `${m.role}: ${textOf(m)}`);
    expect(sent).toEqual(["user: first question", "assistant: first answer", "user: edited second question"]);

    // A second submission of the fork runs too (the log's epochs are the fork's own).
    const next = await runtime.dispatch({ agent: "chat", instance: "t", session: "edited", message: { kind: "user", body: "more" } });
    expect((await runtime.wait(next.submissionId)).status).toBe("succeeded");
    const kinds = (await store.readRecords(forked.conversationId)).map((r) => r.kind);
    expect(kinds.filter((k) => k === "submission_settled")).toHaveLength(3);
  }, 60_000);
});
