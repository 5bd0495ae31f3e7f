/**
 * Subagents over HTTP and the client SDK (issue 10): a waiting, caught-up parent's stream ends
 * like an idle one (the server's 204; a browser tab costs nothing while children work), and the
 * client follows a child from the parent's `task_spawned` record.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { childSessionOf, createClient, type HarnessClient } from "../../../src/client/index.ts";
import type { ConversationRecord, TaskSpawnedPayload } from "../../../src/protocol/records.ts";
import { serve, type ServerHandle } from "../../../src/server/server.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import { scriptedModel } from "../../../src/agent/scripted-model.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { Gate, gatedLocalModel } from "../../support/test-server.ts";

let runtime: Runtime;
let server: ServerHandle;
let client: HarnessClient;
const gate = new Gate();
const store = createMemoryStore();
const lead = scriptedModel([
  [{ toolCall: { id: "call-1", name: "task", arguments: { agent: "researcher", prompt: "[hold] look it up" } } }],
  [{ text: "the parent is done" }],
]);

beforeAll(async () => {
  runtime = createRuntime({
    agents: {
      lead: { initialize: () => ({ model: lead.model, streamFn: lead.streamFn }) },
      researcher: { description: "Looks things up", initialize: () => ({ ...gatedLocalModel(gate) }) },
    },
    store,
    flushPolicy: { bytes: 0, intervalMs: 0 },
    subagents: { lead: ["researcher"] },
  });
  await runtime.start();
  server = await serve(runtime, { port: 0, hostname: "127.0.0.1", log: () => {} });
  client = createClient({ baseUrl: server.url });
});
afterAll(async () => {
  gate.release();
  await server.close();
  await runtime.close();
});

async function collect(iterable: AsyncIterable<ConversationRecord>): Promise<ConversationRecord[]> {
  const out: ConversationRecord[] = [];
  for await (const r of iterable) out.push(r);
  return out;
}

it("a waiting parent's caught-up stream ends (204 on a reconnect); the client follows the child from task_spawned; the parent then settles", async () => {
  const { submissionId } = await client.dispatch("lead", "web", { kind: "user", body: "go" });
  await gate.entered(); // the child runs, held at its model call
  for (let i = 0; i < 100 && (await store.getSubmission(submissionId)).status !== "waiting"; i++) await new Promise((r) => setTimeout(r, 10));
  expect((await store.getSubmission(submissionId)).status).toBe("waiting");

  // The parent waits on a running child: its stream replays and ends, as an idle session's does.
  const parentRecords = await collect(client.stream("lead", "web"));
  const spawned = parentRecords.find((r) => r.kind === "task_spawned");
  expect(spawned, "the stream shows task_spawned with the child's address").toBeDefined();
  expect(parentRecords.at(-1)!.kind).toBe("task_spawned");
  const again = await fetch(`${server.url}/agents/lead/web?lastEventId=${parentRecords.at(-1)!.id}`);
  expect(again.status, "caught up and waiting: nothing to send, stop reconnecting").toBe(204);

  // Follow the child from the record alone.
  const payload = spawned!.payload as TaskSpawnedPayload;
  expect(childSessionOf(payload)).toEqual({ agent: "researcher", instance: payload.childInstance, session: expect.stringMatching(/^task-call-1-[0-9a-f]{8}$/) });
  const following = collect(client.followChild(payload));
  gate.release();
  const childRecords = await following;
  expect(childRecords[0]).toMatchObject({ kind: "conversation_created", payload: { parentRef: { callId: "call-1" } } });
  expect(childRecords.at(-1)).toMatchObject({ kind: "submission_settled", submissionId: payload.childSubmissionId, payload: { status: "succeeded" } });

  const settled = await client.waitForSettled("lead", "web", submissionId);
  expect(settled).toMatchObject({ status: "succeeded" });
  const after = await collect(client.stream("lead", "web", { after: parentRecords.at(-1)!.id }));
  expect(after.map((r) => r.kind)).toContain("tool_outcome");
  expect(after.at(-1)!.kind).toBe("submission_settled");
});
