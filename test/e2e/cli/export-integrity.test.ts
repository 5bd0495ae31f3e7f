/**
 * Issue 33, point 11: `harness export` (a process) sends its bearer token only to the server's own
 * origin, and keeps only bytes that match their digest. The server here is a stand-in that answers
 * `GET …/export` with the lines a hostile or broken deployment could send (an attachment URL on
 * another port, bytes that are not the digest's); a second server on another port records what
 * reaches it.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT } from "../../../src/cli/program.ts";
import type { ExportLine } from "../../../src/protocol/conversation-export.ts";
import { harness } from "./support.ts";

const TOKEN = "export-test-token-not-for-elsewhere";
const dir = mkdtempSync(join(tmpdir(), "harness-export-integrity-"));
const bytes = Buffer.from("the attachment's true bytes, over a URL");
const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
const tampered = Buffer.from("bytes that are not the digest's at all!");

/** Requests each server received: path and headers. */
const seen: { harness: { path: string; headers: IncomingHttpHeaders }[]; elsewhere: { path: string; headers: IncomingHttpHeaders }[] } = { harness: [], elsewhere: [] };
let harnessServer: Server;
let elsewhere: Server;
let harnessUrl: string;
let elsewhereUrl: string;

/** The export the stand-in answers for instance `instance`: one attachment line as `attachment` says. */
function exportLines(attachment: Record<string, unknown>): string {
  const lines = [
    { type: "conversation", version: 1, agent: "assistant", instance: "x", session: "default", conversationId: "c1", createdAt: 0 },
    { type: "attachment", digest, mediaType: "text/plain", size: bytes.length, ...attachment },
    { type: "end", records: 0, attachments: 1 },
  ];
  return lines.map((l) => `${JSON.stringify(l)}\n`).join("");
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

beforeAll(async () => {
  elsewhere = createServer((req, res) => {
    seen.elsewhere.push({ path: req.url ?? "", headers: req.headers });
    res.writeHead(200, { "content-type": "application/octet-stream" }).end(req.url === "/tampered" ? tampered : bytes);
  });
  elsewhereUrl = await listen(elsewhere);
  harnessServer = createServer((req, res) => {
    seen.harness.push({ path: req.url ?? "", headers: req.headers });
    if (req.headers.authorization !== `Bearer ${TOKEN}`) return void res.writeHead(401, { "content-type": "application/json" }).end('{"error":"no token","code":"unauthorized"}');
    const answer = (body: string) => res.writeHead(200, { "content-type": "application/x-ndjson" }).end(body);
    switch (new URL(req.url ?? "/", harnessUrl).pathname) {
      case "/agents/assistant/foreign/export":
        return answer(exportLines({ url: `${elsewhereUrl}/blob` }));
      case "/agents/assistant/foreign-tampered/export":
        return answer(exportLines({ url: `${elsewhereUrl}/tampered` }));
      case "/agents/assistant/own/export":
        return answer(exportLines({ url: `/attachments/${digest}` }));
      case "/agents/assistant/own-tampered/export":
        return answer(exportLines({ url: "/attachments/tampered" }));
      case "/agents/assistant/inline-tampered/export":
        return answer(exportLines({ data: tampered.toString("base64") }));
      case `/attachments/${digest}`:
        return void res.writeHead(200).end(bytes);
      case "/attachments/tampered":
        return void res.writeHead(200).end(tampered);
      default:
        return void res.writeHead(404, { "content-type": "application/json" }).end('{"error":"nothing here","code":"not_found"}');
    }
  });
  harnessUrl = await listen(harnessServer);
});

afterAll(async () => {
  await new Promise((r) => harnessServer?.close(r));
  await new Promise((r) => elsewhere?.close(r));
  rmSync(dir, { recursive: true, force: true });
});

const exportTo = (instance: string, file: string) => harness(["export", `assistant/${instance}`, "-o", file, "--url", harnessUrl], { HARNESS_TOKEN: TOKEN });

describe("harness export: credentials and digests", () => {
  it("downloads an attachment from another origin with no Authorization header, and from its own origin with it", async () => {
    const foreign = join(dir, "foreign.jsonl");
    const run = await exportTo("foreign", foreign);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(EXIT.ok);
    expect(seen.elsewhere.map((r) => r.path)).toEqual(["/blob"]);
    expect(seen.elsewhere[0]!.headers.authorization).toBeUndefined();
    expect(JSON.stringify(seen.elsewhere[0]!.headers)).not.toContain(TOKEN);
    const line = readFileSync(foreign, "utf8").trim().split("\n").map((l) => JSON.parse(l) as ExportLine)[1]!;
    expect(line).toMatchObject({ type: "attachment", digest, data: bytes.toString("base64") });
    expect(line).not.toHaveProperty("url");

    const own = join(dir, "own.jsonl");
    expect((await exportTo("own", own)).code).toBe(EXIT.ok);
    expect(seen.harness.find((r) => r.path === `/attachments/${digest}`)?.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it("fails when bytes do not match their digest (downloaded elsewhere, on its own origin, or inline): exit 4 naming the attachment, no file left", async () => {
    for (const instance of ["foreign-tampered", "own-tampered", "inline-tampered"]) {
      const file = join(dir, `${instance}.jsonl`);
      const run = await exportTo(instance, file);
      expect(run.code, instance).toBe(EXIT.transport);
      expect(run.stderr, instance).toContain(`error: attachment ${digest}: the bytes that came (${tampered.length} bytes, sha256:`);
      expect(run.stderr, instance).toContain("(attachment_digest_mismatch)");
      expect(existsSync(file), `${instance}: a cut-off export leaves no file`).toBe(false);
    }
    // To stdout: the lines before the bad one came out, the bad bytes never did.
    const stdout = await harness(["export", "assistant/inline-tampered", "--url", harnessUrl], { HARNESS_TOKEN: TOKEN });
    expect(stdout.code).toBe(EXIT.transport);
    expect(stdout.stdout).not.toContain(tampered.toString("base64"));
  });
});
