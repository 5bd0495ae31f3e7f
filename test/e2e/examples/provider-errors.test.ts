import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { HarnessChatTransport } from "../../../src/ai-sdk/chat-transport.ts";
import type { HarnessUIMessageChunk } from "../../../src/ai-sdk/ui-message.ts";
import { createClient } from "../../../src/client/client.ts";
import { LiveConversation } from "../../../src/client/live-conversation.ts";
import type { SubmissionDetail } from "../../../src/protocol/submission-view.ts";
import { harness, harnessProcess } from "../cli/support.ts";
import { killExamples, startCompatibleServer, startExampleProcess, type CompatibleServer, type ExampleProcess } from "./support.ts";

/**
 * Issue 37 point 2: a provider that refuses or cannot be reached does not look like a queue. As a
 * user runs it: `npm start` as a process with `MODEL=openai-compatible/<model>` against a scripted
 * Chat Completions server process (test/support/fixtures/openai-compatible-server.ts, which answers
 * a message `!<status> [retry-after=<s>]` with that error), or against a host that does not exist.
 * Within one retry the reason and the next try are in the submission view (HTTP), `harness ls` and
 * `harness tail` (processes), the AI SDK stream and `LiveConversation` (what `useConversation`
 * renders); a 401 fails at once with its reason (ADR 0053).
 */

const POLL = { timeout: 60_000, interval: 100 };

let dataDir: string;
let llm: CompatibleServer | undefined;

beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), "harness-provider-errors-"));
});
afterEach(async () => {
  await killExamples();
  await llm?.stop();
  llm = undefined;
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** How many requests the compatible server was sent for a message body. */
function requestsFor(output: string, body: string): number {
  return output
    .split("\n")
    .filter((l) => l.startsWith("request "))
    .filter((l) => JSON.stringify((JSON.parse(l.slice("request ".length)) as { body: { messages: unknown[] } }).body.messages.at(-1)).includes(body)).length;
}

async function dispatch(ex: ExampleProcess, session: string, body: string): Promise<string> {
  const res = await fetch(`${ex.url}/agents/assistant/demo`, { method: "POST", body: JSON.stringify({ kind: "user", body, session }) });
  expect(res.status, ex.output()).toBe(202);
  return ((await res.json()) as { submissionId: string }).submissionId;
}

/** The submission view over HTTP, read until it says why it is not progressing. */
async function viewOnceRetrying(ex: ExampleProcess, submissionId: string): Promise<SubmissionDetail> {
  let view: SubmissionDetail | undefined;
  await expect
    .poll(async () => {
      const res = await fetch(`${ex.url}/agents/assistant/demo/submissions/${submissionId}`);
      view = (await res.json()) as SubmissionDetail;
      return view.retry !== undefined || view.status === "settled";
    }, POLL)
    .toBe(true);
  return view!;
}

describe("npm start with a model provider that refuses", () => {
  it("a 429 with Retry-After: the view, harness ls and tail, the AI SDK stream and LiveConversation say rate limited and when the next try is", { timeout: 180_000 }, async () => {
    llm = await startCompatibleServer();
    const ex = await startExampleProcess(["start"], {
      DATA_DIR: join(dataDir, "rate-limited"),
      MODEL: "openai-compatible/llama3.2:3b",
      OPENAI_COMPATIBLE_BASE_URL: `${llm.url}/v1`,
    });
    const submissionId = await dispatch(ex, "limited", "!429 retry-after=120");
    const view = await viewOnceRetrying(ex, submissionId);
    expect(view.status, ex.output()).toBe("queued");
    expect(view.retry).toMatchObject({ reason: "rate_limited", status: 429, error: expect.stringContaining("429") });
    expect(view.retry!.nextAttemptAt, "the provider's 120 s from the failed try").toBeGreaterThanOrEqual(view.createdAt + 120_000);
    expect(view.attemptCount).toBe(1);

    // The CLI, as processes: the listing's status and reason, the detail, the tail's line.
    const ls = await harness(["ls", "assistant/demo", "--session", "limited", "--url", ex.url]);
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout).toMatch(/queued \(retrying\)/);
    expect(ls.stdout).toContain("the model provider is rate limiting (HTTP 429), next try ");
    const detail = await harness(["ls", "assistant/demo", submissionId, "--url", ex.url]);
    expect(detail.stdout).toMatch(/retrying {4}the model provider is rate limiting \(HTTP 429\), next try \d{4}-\d\d-\d\dT/);
    const tail = harnessProcess(["tail", "assistant/demo", "--session", "limited", "--url", ex.url]);
    try {
      await expect.poll(() => tail.stdout(), POLL).toMatch(/↻ retrying: the model provider is rate limiting \(HTTP 429\), next try \S+, attempt 1 of \d+: /);
    } finally {
      tail.kill();
    }

    // The AI SDK stream (what useChat reads): a data-retrying part with the reason and next try.
    const client = createClient({ baseUrl: ex.url });
    const transport = new HarnessChatTransport({ client, agent: "assistant", instance: "demo" });
    const abort = new AbortController();
    const stream = await transport.sendMessages({
      trigger: "submit-message",
      chatId: "limited-chat",
      messageId: undefined,
      messages: [{ id: "m-limited-1", role: "user", parts: [{ type: "text", text: "!429 retry-after=120" }] }],
      abortSignal: abort.signal,
    });
    const reader = stream.getReader();
    let retrying: Extract<HarnessUIMessageChunk, { type: "data-retrying" }> | undefined;
    try {
      while (retrying === undefined) {
        const { value, done } = await reader.read();
        if (done) break;
        if (value.type === "data-retrying") retrying = value;
      }
    } finally {
      abort.abort();
      await reader.cancel().catch(() => {});
    }
    expect(retrying?.data).toMatchObject({ reason: "rate_limited", status: 429, submissionId: "m-limited-1", attemptCount: 1 });
    expect(Date.parse(retrying!.data.nextAttemptAt)).toBeGreaterThan(0);

    // LiveConversation, the store useConversation renders: its snapshot's `retrying`.
    const live = new LiveConversation({ client, agent: "assistant", instance: "demo", session: "limited" });
    live.start();
    try {
      await expect.poll(() => live.getSnapshot().retrying.map((r) => [r.submissionId, r.reason, r.status]), POLL).toEqual([[submissionId, "rate_limited", 429]]);
    } finally {
      live.stop();
    }
  });

  it("a 529: overloaded; a 401 fails at once, its reason the refused key, the provider asked once", { timeout: 180_000 }, async () => {
    llm = await startCompatibleServer();
    const ex = await startExampleProcess(["start"], {
      DATA_DIR: join(dataDir, "refusals"),
      MODEL: "openai-compatible/llama3.2:3b",
      OPENAI_COMPATIBLE_BASE_URL: `${llm.url}/v1`,
      OPENAI_COMPATIBLE_API_KEY: "sk-wrong",
    });
    const overloaded = await viewOnceRetrying(ex, await dispatch(ex, "busy", "!529"));
    expect(overloaded.retry).toMatchObject({ reason: "overloaded", status: 529 });
    expect(overloaded.retry!.nextAttemptAt).toBeGreaterThan(overloaded.createdAt);

    const res = await fetch(`${ex.url}/agents/assistant/demo?wait=true`, { method: "POST", body: JSON.stringify({ kind: "user", body: "!401", session: "bad-key" }) });
    expect(res.status, ex.output()).toBe(200);
    const settled = (await res.json()) as { submissionId: string; status: string; error?: string; errorCode?: string };
    expect(settled).toMatchObject({ status: "failed", errorCode: "run_failed" });
    expect(settled.error).toMatch(/^the model provider refused the API key \(HTTP 401\): check the provider's key variable; /);
    expect(requestsFor(llm.output(), "!401"), "no retry of a refused key").toBe(1);
    const ls = await harness(["ls", "assistant/demo", "--session", "bad-key", "--url", ex.url]);
    expect(ls.stdout).toContain("failed [run_failed] the model provider refused the API key (HTTP 401)");
  });
});

describe("npm start with a model provider that cannot be reached", () => {
  it("a host that does not resolve (ENOTFOUND): the view says unreachable, naming the host, and when it tries next", { timeout: 180_000 }, async () => {
    const ex = await startExampleProcess(["start"], {
      DATA_DIR: join(dataDir, "unreachable"),
      MODEL: "openai-compatible/llama3.2:3b",
      OPENAI_COMPATIBLE_BASE_URL: "http://no-such-model-host.invalid/v1",
    });
    const view = await viewOnceRetrying(ex, await dispatch(ex, "offline", "hello"));
    expect(view.status, ex.output()).toBe("queued");
    expect(view.retry).toMatchObject({ reason: "unreachable", error: expect.stringMatching(/^cannot reach no-such-model-host\.invalid \((ENOTFOUND|EAI_AGAIN)\): /) });
    expect(view.retry!.status).toBeUndefined();
    expect(view.retry!.nextAttemptAt).toBeGreaterThan(view.createdAt);
    const ls = await harness(["ls", "assistant/demo", "--session", "offline", "--url", ex.url]);
    expect(ls.stdout).toContain("the model provider is unreachable, next try ");
  });
});

