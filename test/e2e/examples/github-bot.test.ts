import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConversationRecordOf } from "../../../src/protocol/records.ts";
import { killExamples, recordsUntilSettled, startExampleProcess, type ExampleProcess } from "./support.ts";

/** `npm run example -- github-bot` as a process, fed webhook deliveries over HTTP. */

const SECRET = "webhook-s3cret";

function commentPayload(body: string, overrides: Record<string, unknown> = {}) {
  return {
    action: "created",
    issue: { number: 42, title: "The build fails" },
    comment: { id: 1, body, user: { login: "octocat", type: "User" } },
    repository: { name: "website", full_name: "acme/website", owner: { login: "acme" } },
    sender: { login: "octocat", type: "User" },
    ...overrides,
  };
}

function sign(raw: string | Buffer, secret = SECRET): string {
  return `sha256=${createHmac("sha256", secret).update(raw).digest("hex")}`;
}

interface Delivery {
  event?: string;
  delivery?: string;
  signature?: string | null; // null: no header; undefined: signed with SECRET
  raw: string | Buffer;
}

function deliver(ex: ExampleProcess, d: Delivery): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (d.event !== undefined) headers["x-github-event"] = d.event;
  if (d.delivery !== undefined) headers["x-github-delivery"] = d.delivery;
  if (d.signature !== null) headers["x-hub-signature-256"] = d.signature ?? sign(d.raw);
  return fetch(`${ex.url}/webhooks/github`, { method: "POST", headers, body: d.raw });
}

async function expectError(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  const body = (await res.json()) as { error: string; code: string };
  expect(body.code).toBe(code);
  expect(body.error).toEqual(expect.any(String));
}

let dataDir: string;
beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), "harness-github-bot-"));
});
afterAll(async () => {
  await killExamples();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("examples/github-bot with a webhook secret and no token", () => {
  let ex: ExampleProcess;
  beforeAll(async () => {
    ex = await startExampleProcess(["run", "example", "--", "github-bot"], {
      DATA_DIR: join(dataDir, "signed"),
      GITHUB_WEBHOOK_SECRET: SECRET,
      GITHUB_TOKEN: "",
    });
  }, 60_000);

  it("signed deliveries: 202 with the delivery id, redelivery replays, a mutated payload is 409, the reply is a dry run", async () => {
    const raw = JSON.stringify(commentPayload("It still fails on Windows."));
    const first = await deliver(ex, { event: "issue_comment", delivery: "72d3162e-cc78-11e3-81ab-4c9367dc0958", raw });
    expect(first.status).toBe(202);
    const admitted = (await first.json()) as { submissionId: string; conversationId: string; replayed: boolean };
    expect(admitted).toMatchObject({ submissionId: "72d3162e-cc78-11e3-81ab-4c9367dc0958", replayed: false });

    // GitHub's "Redeliver": the same bytes under the same delivery id.
    const again = await deliver(ex, { event: "issue_comment", delivery: admitted.submissionId, raw });
    expect(again.status).toBe(202);
    expect(await again.json()).toEqual({ ...admitted, replayed: true });
    // Same delivery id, another comment (correctly signed): refused, not a second run.
    const mutatedRaw = JSON.stringify(commentPayload("It still fails on Linux."));
    await expectError(await deliver(ex, { event: "issue_comment", delivery: admitted.submissionId, raw: mutatedRaw }), 409, "dispatch_conflict");

    const stream = `${ex.url}/agents/issue-bot/acme~website~42`;
    const records = await recordsUntilSettled(stream, admitted.submissionId);
    const signals = records.filter((r) => r.kind === "signal") as ConversationRecordOf<"signal">[];
    expect(signals.map((s) => s.payload)).toEqual([
      {
        type: "github_issue_comment",
        body: "It still fails on Windows.",
        sender: { handle: "octocat", platform: "github" },
        tag: "issue-42",
      },
    ]);
    const outcome = records.find((r) => r.kind === "tool_outcome") as ConversationRecordOf<"tool_outcome">;
    expect(outcome.payload).toMatchObject({ toolName: "post_issue_comment", isError: false });
    expect(outcome.payload.data).toMatchObject({ dryRun: true, issue: "acme/website#42", body: expect.stringContaining("@octocat") });
    const settled = records.find((r) => r.kind === "submission_settled") as ConversationRecordOf<"submission_settled">;
    expect(settled.payload.status).toBe("succeeded");
    expect(ex.output()).toMatch(/dry run \(no GITHUB_TOKEN\): would post on acme\/website#42/);
    expect(ex.output()).toMatch(/admitted issue-bot\/acme~website~42\/default sub=72d3162e\S* \(replayed, idempotent\)/);
  }, 60_000);

  it("refuses bad signatures (401), bodies over 1 MiB (413) and malformed deliveries (400); other events are 204; nothing is stored", async () => {
    const issue7 = (body: string, extra: Record<string, unknown> = {}) =>
      JSON.stringify(commentPayload(body, { issue: { number: 7 }, ...extra }));
    const raw = issue7("please look");
    const base = { event: "issue_comment", delivery: "d-7", raw };

    await expectError(await deliver(ex, { ...base, signature: null }), 401, "unauthorized");
    await expectError(await deliver(ex, { ...base, signature: sign(raw, "another secret") }), 401, "unauthorized");
    await expectError(await deliver(ex, { ...base, signature: "sha256=zz" }), 401, "unauthorized");
    // The HMAC covers the exact bytes: the same JSON re-serialized with a space is another body.
    await expectError(await deliver(ex, { ...base, signature: sign(raw), raw: raw.replace('"action":', '"action": ') }), 401, "unauthorized");

    await expectError(await deliver(ex, { ...base, raw: "{not json" }), 400, "invalid_request");
    await expectError(await deliver(ex, { ...base, raw: JSON.stringify({ action: "created" }) }), 400, "invalid_request");
    await expectError(await deliver(ex, { ...base, delivery: undefined }), 400, "invalid_request");
    await expectError(await deliver(ex, { ...base, event: undefined }), 400, "invalid_request");

    for (const ignored of [
      { ...base, event: "push", raw: JSON.stringify({ ref: "refs/heads/main" }) },
      { ...base, event: "ping", raw: JSON.stringify({ zen: "Design for failure." }) },
      { ...base, raw: issue7("edited", { action: "edited" }) },
      { ...base, raw: issue7("I am a bot", { comment: { body: "beep", user: { login: "acme-bot[bot]", type: "Bot" } } }) },
    ]) {
      const res = await deliver(ex, ignored);
      expect(res.status, ignored.event).toBe(204);
      expect(await res.text()).toBe("");
    }

    const log = await fetch(`${ex.url}/agents/issue-bot/acme~website~7`);
    await expectError(log, 404, "conversation_not_found");

    // Last: the server answers 413 before reading the rest and closes that connection.
    const huge = issue7("x".repeat(1024 * 1024));
    await expectError(await deliver(ex, { ...base, raw: huge }), 413, "payload_too_large");
  }, 60_000);
});

describe("examples/github-bot with a token", () => {

  it("with GITHUB_TOKEN the reply tool posts to the issue's comments endpoint, and only there", async () => {
    const posted: { method?: string; url?: string; authorization?: string; body: unknown }[] = [];
    const github: Server = createServer((req: IncomingMessage, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        posted.push({ method: req.method, url: req.url, authorization: req.headers.authorization, body: JSON.parse(body) });
        res.writeHead(201, { "content-type": "application/json" });
        res.end(JSON.stringify({ id: 9, html_url: "https://github.com/acme/website/issues/42#issuecomment-9" }));
      });
    });
    await new Promise<void>((resolve) => github.listen(0, "127.0.0.1", resolve));
    try {
      const api = `http://127.0.0.1:${(github.address() as { port: number }).port}`;
      const ex = await startExampleProcess(["run", "example", "--", "github-bot"], {
        DATA_DIR: join(dataDir, "token"),
        GITHUB_WEBHOOK_SECRET: "",
        GITHUB_TOKEN: "ghp_test",
        GITHUB_API_URL: api,
      });
      // No secret configured: an unsigned delivery is accepted (local trials).
      const res = await deliver(ex, { event: "issue_comment", delivery: "d-token", raw: JSON.stringify(commentPayload("Thanks!")), signature: null });
      expect(res.status).toBe(202);
      const records = await recordsUntilSettled(`${ex.url}/agents/issue-bot/acme~website~42`, "d-token");
      expect(posted).toEqual([
        {
          method: "POST",
          url: "/repos/acme/website/issues/42/comments",
          authorization: "Bearer ghp_test",
          body: { body: expect.stringContaining("Thanks @octocat!") },
        },
      ]);
      const outcome = records.find((r) => r.kind === "tool_outcome") as ConversationRecordOf<"tool_outcome">;
      expect(outcome.payload.data).toMatchObject({ dryRun: false, url: "https://github.com/acme/website/issues/42#issuecomment-9" });
    } finally {
      await new Promise((resolve) => github.close(resolve));
    }
  }, 60_000);
});
