/**
 * Superseded attempts on the real wire (issue 15): a harness process talking to a scripted
 * provider through pi-ai's own clients is `kill -9`-ed mid-stream; a client reading the stream
 * across the crash renders exactly the final reply with `MessageView`, and learns of the
 * abandonment from the new attempt's first record, not at the end.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../src/client/client.ts";
import { MessageView } from "../../src/client/message-view.ts";
import type { ConversationRecord, ConversationRecordOf } from "../../src/protocol/records.ts";
import { freePort } from "../e2e/examples/support.ts";
import { startScriptedProvider, type ProviderApi, type ScriptedProvider } from "../support/scripted-provider.ts";

const FIXTURE = join(import.meta.dirname, "..", "support", "fixtures", "wire-server.ts");
const scratch = mkdtempSync(join(tmpdir(), "superseded-"));
let provider: ScriptedProvider;
/** Holds the first attempt's stream open until the test has killed its process. */
let releaseHold!: () => void;
const hold = new Promise<void>((resolve) => (releaseHold = resolve));
const children = new Set<ChildProcess>();

beforeAll(async () => {
  provider = await startScriptedProvider();
});
afterEach(() => {
  for (const child of children) child.kill("SIGKILL");
  children.clear();
});
afterAll(async () => {
  releaseHold();
  await provider.close();
  rmSync(scratch, { recursive: true, force: true });
});

/**
 * Starts the harness process and resolves once it listens. The lease (3 s) is what the restart
 * waits out; a 1 s lease lapsed under a loaded full suite and a third attempt found no scripted
 * reply (the submission failed).
 */
async function startServer(api: ProviderApi, port: number, dataDir: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--disable-warning=ExperimentalWarning", FIXTURE], {
    env: { PATH: process.env.PATH ?? "", PROVIDER_URL: provider.url, PROVIDER_API: api, PORT: String(port), DATA_DIR: dataDir, LEASE_MS: "3000" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let output = "";
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("listening on")) resolve();
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code, signal) => reject(new Error(`harness exited (${code ?? signal}): ${output}`)));
  });
  return child;
}

async function kill9(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
  children.delete(child);
}

const words = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `w${String(from + i).padStart(2, "0")} `).join("");
const textOf = (r: ConversationRecordOf<"assistant_message_completed">) =>
  ((r.payload.message.body as { content: { type: string; text?: string }[] }).content ?? []).map((c) => c.text ?? "").join("");

describe("a crash mid-stream on the real wire", () => {
  it.each<ProviderApi>(["openai-completions", "anthropic-messages"])("%s: the client's rendered text equals the final reply; the abandonment shows at the new attempt's first record", { timeout: 60_000 }, async (api) => {
    const dataDir = mkdtempSync(join(scratch, "crash-"));
    const port = await freePort();
    // Attempt 1 streams w00…w09 and then stalls (the test kills its process); attempt 2 answers in full.
    provider.script({ blocks: [{ text: words(0, 9) }, { until: hold }, { text: "never sent" }], usage: { input: 100, output: 10 } });
    provider.script({ blocks: [{ text: words(0, 24) }], usage: { input: 120, output: 25 } });
    let server = await startServer(api, port, dataDir);

    const client = createClient({ baseUrl: `http://127.0.0.1:${port}` });
    const instance = `crash-${api}`;
    const { submissionId } = await client.dispatch("assistant", instance, { kind: "user", body: "count to 24" });
    const view = new MessageView();
    const seen: ConversationRecord[] = [];
    let firstAttempt: string | undefined;
    let atSupersede: string | undefined;
    for await (const record of client.stream("assistant", instance)) {
      seen.push(record);
      view.apply(record);
      if (record.submissionId !== submissionId) continue;
      firstAttempt ??= record.attemptId;
      if (atSupersede === undefined && record.attemptId !== undefined && record.attemptId !== firstAttempt) {
        // The new attempt's first record: the abandoned message is gone already.
        atSupersede = view.assistantText(submissionId);
      }
      if (server.exitCode === null && server.signalCode === null && view.assistantText(submissionId) === words(0, 9)) {
        await kill9(server);
        server = await startServer(api, port, dataDir);
      }
      if (record.kind === "submission_settled") break;
    }

    const mine = seen.filter((r) => r.submissionId === submissionId);
    const settled = mine.find((r) => r.kind === "submission_settled") as ConversationRecordOf<"submission_settled">;
    expect(settled.payload.status).toBe("succeeded");
    const final = mine.find((r) => r.kind === "assistant_message_completed") as ConversationRecordOf<"assistant_message_completed">;
    expect(textOf(final)).toBe(words(0, 24));
    expect(new Set(mine.filter((r) => r.kind === "assistant_text_delta").map((r) => r.attemptId)).size).toBe(2);

    expect(view.assistantText(submissionId)).toBe(words(0, 24));
    expect(atSupersede).toBeDefined();
    expect(atSupersede).not.toContain("w09");
    // Concatenating the deltas, as a naive client does, shows the abandoned text too.
    const naive = mine.flatMap((r) => (r.kind === "assistant_text_delta" ? [r.payload.text] : [])).join("");
    expect(naive).toBe(words(0, 9) + words(0, 24));
    // A reader that comes later (the replay) renders the same.
    const replay: ConversationRecord[] = [];
    for await (const record of client.stream("assistant", instance)) replay.push(record);
    expect(MessageView.of(replay).assistantText(submissionId)).toBe(words(0, 24));
    // The killed attempt's usage never reached the harness (it arrives with the stream's end).
    expect(settled.payload.usage).toMatchObject({ input: 120, output: 25 });
  });
});

describe("usage per submission", () => {
  it("anthropic-messages: counts an abandoned attempt's billed tokens (a stream dropped after message_start) with the retry's", { timeout: 60_000 }, async () => {
    const dataDir = mkdtempSync(join(scratch, "usage-"));
    const port = await freePort();
    provider.script({ blocks: [{ text: "w00 w01 " }, { drop: true }], usage: { input: 300, output: 7 } });
    provider.script({ blocks: [{ text: words(0, 3) }], usage: { input: 310, output: 4 } });
    await startServer("anthropic-messages", port, dataDir);
    const client = createClient({ baseUrl: `http://127.0.0.1:${port}` });
    const settled = await client.dispatchAndWait("assistant", "usage", { kind: "user", body: "count" });
    expect(settled.status).toBe("succeeded");
    const detail = await client.getSubmission("assistant", "usage", settled.submissionId);
    expect(detail.attempts.length).toBe(2);
    // 300 input tokens billed for the dropped attempt (reported by message_start), 310 for the retry.
    expect(settled.usage).toMatchObject({ input: 610 });
    const records: ConversationRecord[] = [];
    for await (const record of client.stream("assistant", "usage")) records.push(record);
    expect(MessageView.of(records).assistantText(settled.submissionId)).toBe(words(0, 3));
  });
});
