import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { killExamples, recordsUntilSettled, startCompatibleServer, startExampleProcess, type CompatibleServer } from "./support.ts";

/**
 * Issue 37 point 4: `MODEL=openai-compatible/<model>` with `OPENAI_COMPATIBLE_BASE_URL` (and an
 * optional `OPENAI_COMPATIBLE_API_KEY`), as a user runs it: `npm start` as a process against an
 * OpenAI-compatible server that is a process too (test/support/fixtures/openai-compatible-server.ts,
 * speaking Chat Completions' streaming wire on loopback), a reply that streams text and calls a
 * tool, then answers with its result.
 */


let dataDir: string;
let llm: CompatibleServer | undefined;

beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), "harness-openai-compatible-"));
});
afterEach(async () => {
  await killExamples();
  await llm?.stop();
  llm = undefined;
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** The requests the compatible server printed. */
function requestsOf(output: string): { path: string; authorization: string | null; body: any }[] {
  return output
    .split("\n")
    .filter((l) => l.startsWith("request "))
    .map((l) => JSON.parse(l.slice("request ".length)));
}

describe("npm start with MODEL=openai-compatible/<model>", () => {
  it("streams text and a tool call from an OpenAI-compatible server process, runs the tool, and answers with its result", { timeout: 120_000 }, async () => {
    llm = await startCompatibleServer();
    const ex = await startExampleProcess(["start"], {
      DATA_DIR: join(dataDir, "compatible"),
      MODEL: "openai-compatible/llama3.2:3b",
      OPENAI_COMPATIBLE_BASE_URL: `${llm.url}/v1`,
      OPENAI_COMPATIBLE_API_KEY: "sk-local-test",
    });
    expect(ex.output()).toContain("model: openai-compatible/llama3.2:3b");
    const res = await fetch(`${ex.url}/agents/assistant/demo?wait=true`, { method: "POST", body: JSON.stringify({ kind: "user", body: "what time is it?" }) });
    expect(res.status, ex.output()).toBe(200);
    const settled = (await res.json()) as { submissionId: string; status: string };
    expect(settled.status, `${ex.output()}\n${llm.output()}`).toBe("succeeded");

    const log: ConversationRecord[] = (await recordsUntilSettled(`${ex.url}/agents/assistant/demo`, settled.submissionId)).filter(
      (r) => r.submissionId === settled.submissionId,
    );
    // Streamed: text deltas, then the tool call, the clock's outcome, and the reply naming it.
    expect(log.filter((r) => r.kind === "assistant_text_delta").length).toBeGreaterThan(2);
    const call = log.find((r) => r.kind === "assistant_tool_call") as { payload: { toolName?: string; name?: string } } | undefined;
    expect(JSON.stringify(call?.payload)).toContain('"clock"');
    const outcome = log.find((r) => r.kind === "tool_outcome");
    const now = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/.exec(JSON.stringify(outcome?.payload))?.[0];
    expect(now, JSON.stringify(outcome?.payload)).toBeDefined();
    const completed = log.filter((r) => r.kind === "assistant_message_completed").map((r) => JSON.stringify(r.payload));
    expect(completed.at(-1)).toContain(`the tool said: ${now}`);

    // What the server was sent: the model id as given, streamed, the key as a bearer token, the
    // agent's tool offered, the system prompt in the `system` role; then the tool's result.
    const requests = requestsOf(llm.output());
    expect(requests).toHaveLength(2);
    expect(requests[0]).toMatchObject({ path: "/v1/chat/completions", authorization: "Bearer sk-local-test", body: { model: "llama3.2:3b", stream: true } });
    expect(requests[0]!.body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(["clock"]);
    expect(requests[0]!.body.messages[0]).toMatchObject({ role: "system" });
    expect(requests[1]!.body.messages.at(-1)).toMatchObject({ role: "tool", content: now });
  });

  it("without OPENAI_COMPATIBLE_API_KEY no key is needed; without OPENAI_COMPATIBLE_BASE_URL npm start refuses to start, naming the variable", { timeout: 120_000 }, async () => {
    llm = await startCompatibleServer();
    const keyless = await startExampleProcess(["start"], {
      DATA_DIR: join(dataDir, "keyless"),
      MODEL: "openai-compatible/qwen2.5",
      OPENAI_COMPATIBLE_BASE_URL: `${llm.url}/v1`,
    });
    const ok = await fetch(`${keyless.url}/agents/assistant/demo?wait=true`, { method: "POST", body: JSON.stringify({ kind: "user", body: "hi there" }) });
    expect(await ok.json()).toMatchObject({ status: "succeeded" });
    expect(requestsOf(llm.output()).at(-1)!.body.model).toBe("qwen2.5");
    await killExamples();

    // Checked at start: the process says what is missing, in one line, and exits.
    await expect(startExampleProcess(["start"], { DATA_DIR: join(dataDir, "missing"), MODEL: "openai-compatible/qwen2.5" })).rejects.toThrow(
      'basic example: provider "openai-compatible" is not configured: set OPENAI_COMPATIBLE_BASE_URL',
    );
  });
});
