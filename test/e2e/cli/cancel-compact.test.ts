import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT } from "../../../src/cli/program.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { serve, type ServerHandle } from "../../../src/server/server.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import { scriptedModel } from "../../../src/agent/scripted-model.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { Gate, gatedLocalModel } from "../../support/test-server.ts";
import { harness } from "./support.ts";

/** `harness cancel` and `harness compact`, as a process against a running server. */

let runtime: Runtime;
let server: ServerHandle;
let url: string;
const gate = new Gate();

beforeAll(async () => {
  runtime = createRuntime({
    agents: {
      assistant: { initialize: () => ({ ...gatedLocalModel(gate) }) },
      // Replies like `assistant`, but its summarizer is misconfigured: a compaction settles failed.
      nosummary: {
        initialize: () => ({
          ...gatedLocalModel(gate),
          compaction: { streamFn: scriptedModel([[{ error: "401 invalid api key" }]]).streamFn },
        }),
      },
    },
    store: createMemoryStore(),
    flushPolicy: { bytes: 0, intervalMs: 0 },
    onObserverError: () => {},
  });
  await runtime.start();
  server = await serve(runtime, { port: 0, hostname: "127.0.0.1", log: () => {} });
  url = server.url;
});

afterAll(async () => {
  gate.release();
  await server.close();
  await runtime.close();
});

async function send(target: string, text: string, session = "default"): Promise<string> {
  const sent = await harness(["--json", "send", target, text, "--session", session, "--url", url]);
  expect(sent.code).toBe(EXIT.ok);
  return (JSON.parse(sent.stdout) as { submissionId: string }).submissionId;
}

async function records(target: string, session = "default"): Promise<ConversationRecord[]> {
  const tail = await harness(["--json", "tail", target, "--session", session, "--url", url]);
  return tail.stdout.trim().split("\n").map((line) => JSON.parse(line) as ConversationRecord);
}

describe("harness cancel", () => {
  it("stops a running submission (--wait follows it to the settlement) and settles a queued one at once", async () => {
    gate.close();
    const running = await send("assistant/cx-1", "[hold] a long one", "s1");
    await gate.entered();
    const queued = await send("assistant/cx-1", "behind it", "s1");

    const now = await harness(["cancel", "assistant/cx-1", queued, "--reason", "changed my mind", "--url", url]);
    expect(now).toMatchObject({ code: EXIT.ok, stderr: "" });
    expect(now.stdout).toBe(`${queued} failed [cancelled] cancelled: changed my mind\n`);

    // The run is held at the model: it stops at the cancel, not by finishing. No --session: the
    // submission names its own.
    const stopped = await harness(["--json", "cancel", "assistant/cx-1", running, "--wait", "--url", url]);
    expect(stopped.code).toBe(EXIT.ok);
    expect(JSON.parse(stopped.stdout)).toMatchObject({
      submissionId: running,
      status: "settled",
      outcome: { status: "failed", errorCode: "cancelled", error: "cancelled: cancelled by request" },
    });

    // The log agrees: both settled cancelled, the running one first (the session's order).
    const settled = (await records("assistant/cx-1", "s1")).filter((r) => r.kind === "submission_settled");
    expect(settled.map((r) => [r.submissionId, r.kind === "submission_settled" && r.payload.errorCode])).toEqual([
      [running, "cancelled"],
      [queued, "cancelled"],
    ]);
    // ls: settled and cancelled, no longer "cancelling".
    const ls = await harness(["ls", "assistant/cx-1", "--session", "s1", "--url", url]);
    const rows = ls.stdout.trim().split("\n").slice(1);
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row).toMatch(/^\S+\s+settled\s+\d+\s+\S+\s+\S+\s+failed \[cancelled\]/);
    // Again for a cancelled one: still cancelled, exit 0.
    expect((await harness(["cancel", "assistant/cx-1", running, "--url", url])).code).toBe(EXIT.ok);
  });

  it("without --wait a running submission answers cancelling", async () => {
    gate.close();
    const running = await send("assistant/cx-2", "[hold] stop me");
    await gate.entered();
    const answer = await harness(["cancel", "assistant/cx-2", running, "--url", url]);
    expect(answer).toMatchObject({ code: EXIT.ok, stdout: `cancelling ${running} (it stops at its next safe point)\n` });
    await runtime.wait(running);
  });

  it("tells a refusal (3: settled otherwise, unknown) from an unreachable server (4)", async () => {
    gate.release();
    const done = await send("assistant/cx-3", "quick");
    await runtime.wait(done);
    const late = await harness(["cancel", "assistant/cx-3", done, "--url", url]);
    expect(late.code).toBe(EXIT.refused);
    expect(late.stderr).toContain("already_settled");
    const unknown = await harness(["cancel", "assistant/cx-3", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "--url", url]);
    expect(unknown.code).toBe(EXIT.refused);
    expect(unknown.stderr).toContain("submission_not_found");
    const down = await harness(["cancel", "assistant/cx-3", done, "--url", "http://127.0.0.1:9"]);
    expect(down.code).toBe(EXIT.transport);
    expect(down.stderr).toContain("cannot reach the harness");
    expect((await harness(["cancel", "assistant/cx-3", "--url", url])).code).toBe(EXIT.usage);
  });
});

describe("harness compact", () => {
  it("compacts a session's history (--wait: exit 0 with the result; a compaction record in the log)", async () => {
    gate.release();
    for (const text of ["one", "two", "three"]) await runtime.wait(await send("assistant/cp-1", text));

    const admitted = await harness(["--json", "compact", "assistant/cp-1", "--url", url]);
    expect(admitted.code).toBe(EXIT.ok);
    const { submissionId } = JSON.parse(admitted.stdout) as { submissionId: string };
    expect(await runtime.wait(submissionId)).toMatchObject({ status: "succeeded", result: { compacted: true } });

    const again = await harness(["compact", "assistant/cp-1", "--wait", "--url", url]);
    expect(again.code).toBe(EXIT.ok);
    expect(again.stdout).toMatch(/^\S+ (compacted|nothing to compact)\n$/);
    const log = await records("assistant/cp-1");
    expect(log.filter((r) => r.kind === "compaction").length).toBeGreaterThanOrEqual(1);
    expect(log.find((r) => r.kind === "compaction")!.submissionId).toBe(submissionId);
  });

  it("exits 1 when the compaction settles failed, 3 without a conversation, 4 when unreachable", async () => {
    gate.release();
    for (const text of ["one", "two"]) await runtime.wait(await send("nosummary/cp-2", text));
    const failed = await harness(["--json", "compact", "nosummary/cp-2", "--wait", "--url", url]);
    expect(failed.code).toBe(EXIT.settledFailed);
    expect(JSON.parse(failed.stdout)).toMatchObject({ status: "failed", errorCode: "run_failed" });

    const none = await harness(["compact", "assistant/cp-nobody", "--url", url]);
    expect(none.code).toBe(EXIT.refused);
    expect(none.stderr).toContain("conversation_not_found");
    const down = await harness(["compact", "assistant/cp-1", "--wait", "--url", "http://127.0.0.1:9"]);
    expect(down.code).toBe(EXIT.transport);
  });
});
