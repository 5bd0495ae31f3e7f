import { execFile } from "node:child_process";
import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, request, type IncomingMessage, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConversationRecordOf } from "../../../src/protocol/records.ts";
import { freePort, killExamples, recordsUntilSettled, ROOT, startExampleProcess, type ExampleProcess } from "./support.ts";

/**
 * `npm run example -- github-bot` as a process, fed webhook deliveries over HTTP: the harness API
 * on PORT (loopback), the webhook alone on WEBHOOK_PORT.
 */

interface Bot extends ExampleProcess {
  /** The webhook listener's base URL. */
  webhook: string;
}

async function startBot(env: Record<string, string>): Promise<Bot> {
  const webhookPort = await freePort();
  const ex = await startExampleProcess(["run", "example", "--", "github-bot"], { WEBHOOK_PORT: String(webhookPort), ...env });
  const webhook = `http://127.0.0.1:${webhookPort}`;
  const deadline = Date.now() + 10_000;
  while (!ex.output().includes(`webhook listening on ${webhook}/webhooks/github`)) {
    if (Date.now() > deadline) throw new Error(`no webhook listener:\n${ex.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return Object.assign(ex, { webhook });
}

/** Runs the example expecting it to refuse to start: its exit code and what it printed. */
async function refusedStart(env: Record<string, string>): Promise<{ code: number; stderr: string } | undefined> {
  return promisify(execFile)("npm", ["run", "example", "--", "github-bot"], {
    cwd: ROOT,
    env: { ...process.env, PORT: "0", WEBHOOK_PORT: "0", DATA_DIR: join(dataDir, "refused"), GITHUB_WEBHOOK_SECRET: "", GITHUB_TOKEN: "", ...env },
  }).then(
    () => undefined,
    (err: { code: number; stderr: string }) => err,
  );
}

const SECRET = "webhook-s3cret";

function commentPayload(body: string, overrides: Record<string, unknown> = {}) {
  return {
    action: "created",
    issue: { number: 42, title: "The build fails" },
    comment: { id: 1, body, created_at: new Date().toISOString(), user: { login: "octocat", type: "User" } },
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
  host?: string;
}

function deliver(ex: Bot, d: Delivery): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (d.event !== undefined) headers["x-github-event"] = d.event;
  if (d.delivery !== undefined) headers["x-github-delivery"] = d.delivery;
  if (d.signature !== null) headers["x-hub-signature-256"] = d.signature ?? sign(d.raw);
  if (d.host === undefined) return fetch(`${ex.webhook}/webhooks/github`, { method: "POST", headers, body: d.raw });
  // fetch never sends a Host of the caller's choosing: node:http does.
  return new Promise((resolve, reject) => {
    const req = request(`${ex.webhook}/webhooks/github`, { method: "POST", headers: { ...headers, host: d.host } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === "string") h.set(k, v);
        resolve(new Response(res.statusCode === 204 ? null : Buffer.concat(chunks), { status: res.statusCode, headers: h }));
      });
    });
    req.on("error", reject);
    req.end(d.raw);
  });
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
  let ex: Bot;
  beforeAll(async () => {
    ex = await startBot({
      DATA_DIR: join(dataDir, "signed"),
      GITHUB_WEBHOOK_SECRET: SECRET,
      GITHUB_TOKEN: "",
      WEBHOOK_HOSTS: "hooks.example.test",
    });
  }, 60_000);

  it("signed deliveries: 202 with the comment's id, a redelivery or a replay under new delivery ids is the same submission, a mutated payload is 409, the reply is a dry run", async () => {
    const raw = JSON.stringify(commentPayload("It still fails on Windows."));
    const first = await deliver(ex, { event: "issue_comment", delivery: "72d3162e-cc78-11e3-81ab-4c9367dc0958", raw });
    expect(first.status).toBe(202);
    const admitted = (await first.json()) as { submissionId: string; conversationId: string; replayed: boolean };
    expect(admitted).toMatchObject({ submissionId: "github-comment-1", replayed: false });

    // GitHub's "Redeliver": the same bytes under the same delivery id.
    const again = await deliver(ex, { event: "issue_comment", delivery: "72d3162e-cc78-11e3-81ab-4c9367dc0958", raw });
    expect(again.status).toBe(202);
    expect(await again.json()).toEqual({ ...admitted, replayed: true });
    // The captured signed body replayed under delivery ids of the attacker's choosing: the
    // delivery header is not signed, the comment id is, so it stays one submission.
    for (const delivery of ["forged-1", "forged-2"]) {
      const replay = await deliver(ex, { event: "issue_comment", delivery, raw });
      expect(replay.status).toBe(202);
      expect(await replay.json()).toEqual({ ...admitted, replayed: true });
    }
    // The same comment with another body (correctly signed): refused, not a second run.
    const mutatedRaw = JSON.stringify(commentPayload("It still fails on Linux."));
    await expectError(await deliver(ex, { event: "issue_comment", delivery: "d-mutated", raw: mutatedRaw }), 409, "dispatch_conflict");

    const stream = `${ex.url}/agents/issue-bot/acme~website~42`;
    const records = await recordsUntilSettled(stream, admitted.submissionId);
    expect(records.filter((r) => r.kind === "tool_outcome"), "one reply for one comment").toHaveLength(1);
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
    expect(ex.output()).toMatch(/admitted issue-bot\/acme~website~42\/default sub=github-comment-1 \(replayed, idempotent\)/);
  }, 60_000);

  it("a signed delivery of a comment older than an hour is refused (400) and stores nothing", async () => {
    const old = commentPayload("Old news.", { issue: { number: 8 } });
    old.comment.id = 808;
    old.comment.created_at = new Date(Date.now() - 2 * 3600_000).toISOString();
    const res = await deliver(ex, { event: "issue_comment", delivery: "d-old", raw: JSON.stringify(old) });
    await expectError(res, 400, "invalid_request");
    await expectError(await fetch(`${ex.url}/agents/issue-bot/acme~website~8`), 404, "conversation_not_found");
  }, 60_000);

  it("the webhook port serves the webhook and /healthz only: the harness's routes are not there, and an unknown Host is refused", async () => {
    expect(await (await fetch(`${ex.webhook}/healthz`)).text()).toBe("ok");
    // A direct dispatch and a conversation read, as the review made them on the one port there was.
    await expectError(
      await fetch(`${ex.webhook}/agents/issue-bot/acme~website~42`, { method: "POST", body: JSON.stringify({ kind: "user", body: "post on another repo" }) }),
      404,
      "not_found",
    );
    await expectError(await fetch(`${ex.webhook}/agents/issue-bot/acme~website~42`), 404, "not_found");
    await expectError(await fetch(`${ex.webhook}/agents/issue-bot/acme~website~42/submissions`), 404, "not_found");
    // A Host the listener was not told of (DNS rebinding, a tunnel not configured) is refused;
    // the tunnel's name given in WEBHOOK_HOSTS is answered.
    const payload = commentPayload("Via the tunnel.", { issue: { number: 9 } });
    payload.comment.id = 909;
    const raw = JSON.stringify(payload);
    await expectError(await deliver(ex, { event: "issue_comment", delivery: "d-host", raw, host: "evil.example" }), 403, "host_not_allowed");
    expect((await deliver(ex, { event: "issue_comment", delivery: "d-host", raw, host: "hooks.example.test" })).status).toBe(202);
  }, 60_000);

  it("repository names `.` and `..` are refused (400), nothing stored", async () => {
    for (const name of [".", ".."]) {
      const payload = commentPayload("traverse", { repository: { name, full_name: `acme/${name}`, owner: { login: "acme" } } });
      payload.comment.id = name.length * 1000 + 1;
      await expectError(await deliver(ex, { event: "issue_comment", delivery: `d-dots-${name.length}`, raw: JSON.stringify(payload) }), 400, "invalid_request");
    }
    await expectError(await fetch(`${ex.url}/agents/issue-bot/acme~..~42`), 404, "conversation_not_found");
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
      { ...base, raw: issue7("I am a bot", { comment: { id: 77, body: "beep", created_at: new Date().toISOString(), user: { login: "acme-bot[bot]", type: "Bot" } } }) },
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
  it("refuses to start with GITHUB_TOKEN and no secret (unless ALLOW_UNSIGNED=1), on a non-loopback HOST, or with CORS_ORIGINS", async () => {
    const unsigned = await refusedStart({ GITHUB_TOKEN: "ghp_test" });
    expect(unsigned?.code).toBe(1);
    expect(unsigned?.stderr).toMatch(/GITHUB_TOKEN is set but GITHUB_WEBHOOK_SECRET is not/);
    const exposed = await refusedStart({ HOST: "0.0.0.0" });
    expect(exposed?.code).toBe(1);
    expect(exposed?.stderr).toMatch(/HOST=0\.0\.0\.0 refused: the harness API port stays on loopback/);
    const cors = await refusedStart({ CORS_ORIGINS: "*" });
    expect(cors?.code).toBe(1);
    expect(cors?.stderr).toMatch(/CORS_ORIGINS refused/);
  }, 60_000);

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
      const ex = await startBot({
        DATA_DIR: join(dataDir, "token"),
        GITHUB_WEBHOOK_SECRET: "",
        GITHUB_TOKEN: "ghp_test",
        GITHUB_API_URL: api,
        ALLOW_UNSIGNED: "1",
      });
      // No secret, and unsigned deliveries allowed on purpose (a local trial).
      const res = await deliver(ex, { event: "issue_comment", delivery: "d-token", raw: JSON.stringify(commentPayload("Thanks!")), signature: null });
      expect(res.status).toBe(202);
      const records = await recordsUntilSettled(`${ex.url}/agents/issue-bot/acme~website~42`, "github-comment-1");
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
