import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ConversationRecordOf } from "../../../src/protocol/records.ts";
import { openSqliteStore } from "../../../src/sqlite/index.ts";
import { parseSse, readUntil, recordsOf } from "../../support/test-server.ts";
import { killExamples, startExampleProcess, startScriptNodeOptions, type ExampleProcess } from "./support.ts";

/** The README walkthrough against `npm start` as a real process (keyless, SQLite in a temp dir). */

const LEASE_MS = 1500;

type Example = ExampleProcess;

function startExample(dataDir: string, extraEnv: Record<string, string> = {}): Promise<Example> {
  return startExampleProcess(["start"], { DATA_DIR: dataDir, LEASE_MS: String(LEASE_MS), ...extraEnv });
}

function post(ex: Example, path: string, body: unknown): Promise<Response> {
  return fetch(`${ex.url}${path}`, { method: "POST", body: JSON.stringify(body) });
}

let dataDir: string;
beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), "harness-quickstart-"));
});
afterEach(killExamples);
afterAll(() => {
  rmSync(dataDir, { recursive: true, force: true });
});

describe("npm start: the README walkthrough", () => {
  it("fire-and-forget, ?wait=true, the stream with and without Last-Event-ID, steer with nothing running", async () => {
    const page = "http://localhost:5173";
    const ex = await startExample(join(dataDir, "walkthrough"), { CORS_ORIGINS: page });

    // A browser page: the allowed origin gets its preflight answered, any other origin a 403.
    const preflight = await fetch(`${ex.url}/agents/assistant/demo`, {
      method: "OPTIONS",
      headers: { Origin: page, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe(page);
    const foreign = await fetch(`${ex.url}/agents/assistant/elsewhere`, {
      method: "POST",
      headers: { Origin: "https://evil.example", "Content-Type": "text/plain;charset=UTF-8" },
      body: JSON.stringify({ kind: "user", body: "hi" }),
    });
    expect(foreign.status).toBe(403);
    expect(await foreign.json()).toMatchObject({ code: "origin_not_allowed" });

    const fired = await post(ex, "/agents/assistant/demo", { kind: "user", body: "what time is it?" });
    expect(fired.status).toBe(202);
    const first = (await fired.json()) as { submissionId: string; conversationId: string };

    const waited = await post(ex, "/agents/assistant/demo?wait=true", { kind: "user", body: "hello there" });
    expect(waited.status).toBe(200);
    const second = (await waited.json()) as Record<string, string>;
    expect(second).toMatchObject({ status: "succeeded", conversationId: first.conversationId });

    // Same session: the first submission settled before the second (head-of-line), so the
    // session is idle now and the stream replays everything, then ends.
    const res = await fetch(`${ex.url}/agents/assistant/demo`);
    expect(res.status).toBe(200);
    const records = recordsOf(parseSse(await res.text()));
    const kinds = records.map((r) => r.kind);
    expect(kinds[0]).toBe("conversation_created");
    expect(kinds).toContain("assistant_tool_call");
    const outcome = records.find((r) => r.kind === "tool_outcome")!;
    expect(JSON.stringify(outcome.payload)).toMatch(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
    const settled = records.filter((r) => r.kind === "submission_settled");
    expect(settled.map((r) => r.submissionId)).toEqual([first.submissionId, second.submissionId]);
    const texts = records
      .filter((r) => r.kind === "assistant_message_completed")
      .map((r) => JSON.stringify(r.payload));
    expect(texts.some((t) => t.includes("The time is"))).toBe(true);
    expect(texts.some((t) => t.includes("You said: hello there"))).toBe(true);

    // Resume from an offset: strictly after it.
    const cut = records[3]!.id;
    const resumed = await fetch(`${ex.url}/agents/assistant/demo`, { headers: { "Last-Event-ID": cut } });
    expect(recordsOf(parseSse(await resumed.text()))).toEqual(records.slice(4));
    const caughtUp = await fetch(`${ex.url}/agents/assistant/demo?lastEventId=${records.at(-1)!.id}`);
    expect(caughtUp.status).toBe(204);

    const steer = await post(ex, "/agents/assistant/demo/steer", { body: "answer in French" });
    expect(steer.status).toBe(409);
    expect(await steer.json()).toMatchObject({ code: "no_run_in_flight" });

    // Compaction with curl: two exchanges, so the first becomes a summary.
    const compacted = await post(ex, "/agents/assistant/demo/compact?wait=true", {});
    expect(compacted.status).toBe(200);
    expect(await compacted.json()).toMatchObject({ status: "succeeded", result: { compacted: true }, usage: expect.any(Object) });
    const after = recordsOf(parseSse(await (await fetch(`${ex.url}/agents/assistant/demo`)).text()));
    const compaction = after.find((r) => r.kind === "compaction") as ConversationRecordOf<"compaction">;
    expect(compaction.payload).toMatchObject({ reason: "manual", firstKeptEntryId: records.find((r) => r.kind === "user_message" && r.submissionId === second.submissionId)!.id });
    expect(compaction.payload.summary).toContain("[user] what time is it?");
    expect(ex.output()).toMatch(/compacted assistant\/demo\/default sub=\S+ manual: ~\d+ tokens summarized, ~\d+ kept/);

    const health = await fetch(`${ex.url}/healthz`);
    expect(await health.text()).toBe("ok");
    expect(ex.output()).toMatch(/admitted assistant\/demo\/default/);
    expect(ex.output()).toMatch(/tool finished .* clock/);
    expect(ex.output()).toMatch(/settled assistant\/demo\/default .* succeeded/);
  }, 60_000);

  it("its own build and Node options (--max-semi-space-size=2): result schemas are compiled and replies checked on the result-schema thread (issue 33)", async () => {
    const ex = await startExample(join(dataDir, "structured"));
    // The process is the bundle npm start's prestart built, under the options its start script names.
    const argv = readFileSync(`/proc/${ex.pid}/cmdline`, "utf8").split("\0").slice(1, -1);
    expect(argv).toEqual([...startScriptNodeOptions(), "build/quickstart.mjs"]);
    expect(argv.some((arg) => arg.startsWith("--max-semi-space-size="))).toBe(true);

    // The curl: a reply that is no JSON document fails the check after the corrective turns (it was a 500).
    const prose = await post(ex, "/agents/assistant/x?wait=true", { kind: "user", body: "json please", resultSchema: { type: "object" } });
    expect(prose.status).toBe(200);
    expect(await prose.json()).toMatchObject({
      status: "failed",
      errorCode: "result_schema_invalid",
      error: "structured result did not validate against the requested schema: the reply is not a JSON document",
    });

    // The keyless model echoes the message, so a fenced JSON block in it is the reply's result.
    const schema = { type: "object", required: ["answer"], properties: { answer: { type: "integer" } } };
    const fenced = await post(ex, "/agents/assistant/x?wait=true", { kind: "user", body: 'json please\n```json\n{"answer": 42}\n```', resultSchema: schema });
    expect(await fenced.json()).toMatchObject({ status: "succeeded", result: { answer: 42 } });

    // Admission compiles on the thread too: a schema that does not compile is the client's 400.
    const broken = await post(ex, "/agents/assistant/x", { kind: "user", body: "hi", resultSchema: { type: "nonsense" } });
    expect(broken.status).toBe(400);
    expect(await broken.json()).toMatchObject({ code: "invalid_dispatch", error: expect.stringContaining("invalid resultSchema") });
    expect(ex.output()).not.toContain("ERR_WORKER_INVALID_EXEC_ARGV");
  }, 60_000);

  it("durability: kill -9 mid-reply, start again over the same data, and the run settles; both attempts show", async () => {
    const dir = join(dataDir, "durability");
    const ex = await startExample(dir);
    const fired = await post(ex, "/agents/assistant/durable", { kind: "user", body: "slow" });
    expect(fired.status).toBe(202);
    const { submissionId } = (await fired.json()) as { submissionId: string };

    // Watch until the reply is streaming, then kill the process without warning.
    const live = await fetch(`${ex.url}/agents/assistant/durable`);
    const { frames } = await readUntil(live, (f) => recordsOf(f).filter((r) => r.kind === "assistant_text_delta").length >= 2);
    const firstAttempt = recordsOf(frames).find((r) => r.kind === "assistant_text_delta")!.attemptId;
    expect(firstAttempt).toBeDefined();
    process.kill(ex.pid, "SIGKILL");
    await ex.exited;

    const again = await startExample(dir);
    const stream = await fetch(`${again.url}/agents/assistant/durable`);
    expect(stream.status).toBe(200);
    const done = await readUntil(stream, (f) => recordsOf(f).some((r) => r.kind === "submission_settled"), 30_000);
    const records = recordsOf(done.frames).filter((r) => r.submissionId === submissionId);
    const settled = records.find((r) => r.kind === "submission_settled") as ConversationRecordOf<"submission_settled">;
    expect(settled.payload.status).toBe("succeeded");
    const attempts = new Set(records.filter((r) => r.kind === "assistant_text_delta").map((r) => r.attemptId));
    expect(attempts.size).toBe(2);
    expect(attempts.has(firstAttempt)).toBe(true);
    expect(settled.attemptId).not.toBe(firstAttempt);
    expect(again.output()).toMatch(/claimed assistant\/durable\/default .*\(#2\)/);
  }, 90_000);

  it("SIGTERM exits 0 and releases the in-flight submission (queued, not failed)", async () => {
    const dir = join(dataDir, "sigterm");
    const ex = await startExample(dir);
    const fired = await post(ex, "/agents/assistant/graceful", { kind: "user", body: "slow" });
    const { submissionId, conversationId } = (await fired.json()) as { submissionId: string; conversationId: string };
    const live = await fetch(`${ex.url}/agents/assistant/graceful`);
    const reading = readUntil(live, () => false, 30_000); // until the server ends it
    await new Promise((r) => setTimeout(r, 600)); // mid-reply
    process.kill(ex.pid, "SIGTERM");
    expect(await ex.exited).toEqual({ code: 0, signal: null });
    const { ended, frames } = await reading;
    expect(ended).toBe(true);
    expect(recordsOf(frames).map((r) => r.kind)).toContain("assistant_text_delta");

    const store = openSqliteStore({ path: join(dir, "harness.db") });
    try {
      const sub = await store.getSubmission(submissionId);
      expect(sub.status).toBe("queued");
      expect(sub.attemptId).toBeUndefined();
      const recs = await store.readRecords(conversationId);
      expect(recs.some((r) => r.kind === "submission_settled")).toBe(false);
    } finally {
      await store.close();
    }

    // The next process picks it up at once (no lease to wait for) and finishes it.
    const again = await startExample(dir);
    const res = await fetch(`${again.url}/agents/assistant/graceful`);
    const done = await readUntil(res, (f) => recordsOf(f).some((r) => r.kind === "submission_settled"), 30_000);
    const settled = recordsOf(done.frames).find((r) => r.kind === "submission_settled") as ConversationRecordOf<"submission_settled">;
    expect(settled.payload.status).toBe("succeeded");
  }, 90_000);
});
