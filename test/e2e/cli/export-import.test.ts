/**
 * `harness export` and `harness import` as processes (ADR 0034), between two embedded
 * deployments (each its own runtime, SQLite file and server): the export is a self-contained file
 * (the attachment the server sends as a URL, being over 256 KiB, is downloaded into it), and the
 * import rebuilds the conversation in the other deployment, where the next run's model reads the
 * imported history. A bad file is refused before anything is uploaded (exit 3, the line named),
 * and so is an import into a session that has a conversation.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { localModel } from "../../../src/agent/local-model.ts";
import { EXIT } from "../../../src/cli/program.ts";
import type { ExportLine } from "../../../src/protocol/conversation-export.ts";
import type { AttachmentRef } from "../../../src/protocol/records.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import { serve, type ServerHandle } from "../../../src/server/server.ts";
import { openSqliteStore } from "../../../src/sqlite/index.ts";
import type { Store } from "../../../src/store/store.ts";
import { pngOfSize } from "../../support/attachment-fixtures.ts";
import { harness } from "./support.ts";

const dir = mkdtempSync(join(tmpdir(), "harness-export-"));
interface Deployment {
  store: Store;
  runtime: Runtime;
  server: ServerHandle;
}
let a: Deployment;
let b: Deployment;

async function deploy(name: string): Promise<Deployment> {
  const store = openSqliteStore({ path: join(dir, `${name}.db`) });
  const runtime = createRuntime({
    agents: { assistant: { initialize: () => localModel({ chunkSize: 64 }) } },
    store,
    flushPolicy: { bytes: 0, intervalMs: 0 },
    onObserverError: () => {},
  });
  await runtime.start();
  return { store, runtime, server: await serve(runtime, { port: 0, hostname: "127.0.0.1", log: () => {}, maxRequestWaitMs: 20_000 }) };
}

const small = pngOfSize(2_000, 3);
const large = pngOfSize(300_000, 4);

beforeAll(async () => {
  a = await deploy("a");
  b = await deploy("b");
  const upload = async (bytes: Buffer) =>
    (await (await fetch(`${a.server.url}/attachments`, { method: "POST", headers: { "content-type": "image/png" }, body: bytes })).json()) as AttachmentRef;
  const refs = [await upload(small), await upload(large)];
  for (const message of [{ kind: "user", body: "two pictures", attachments: refs }, { kind: "user", body: "and a word" }]) {
    const res = await fetch(`${a.server.url}/agents/assistant/src?wait=true`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(message) });
    expect(res.status).toBe(200);
  }
});

afterAll(async () => {
  for (const d of [a, b]) {
    await d?.server.close();
    await d?.runtime.close();
  }
  rmSync(dir, { recursive: true, force: true });
});

describe("harness export / import", () => {
  it("exports a self-contained file from one deployment and imports it into another", async () => {
    const file = join(dir, "conversation.jsonl");
    const exported = await harness(["export", "assistant/src", "-o", file, "--url", a.server.url]);
    expect(exported.stderr).toBe("");
    expect(exported.code).toBe(EXIT.ok);
    const source = await a.store.getConversation({ agent: "assistant", instance: "src", session: "default" });
    const records = await a.store.readRecords(source.id);
    expect(exported.stdout).toContain(`exported ${records.length} records and 2 attachments to ${file}`);
    const lines = readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l) as ExportLine);
    const attachments = lines.filter((l) => l.type === "attachment");
    // The server sent the large one as a URL; the CLI put its bytes in the file.
    expect(attachments.map((l) => [l.size, l.url, Buffer.from(l.data ?? "", "base64").length])).toEqual([
      [small.length, undefined, small.length],
      [large.length, undefined, large.length],
    ]);

    const imported = await harness(["import", file, "--to", "assistant/dst", "-s", "restored", "--url", b.server.url]);
    expect(imported.stderr).toBe("");
    expect(imported.code).toBe(EXIT.ok);
    expect(imported.stdout).toMatch(new RegExp(`imported ${records.length} records into assistant/dst session restored \\(conversation \\w+; 2 attachments\\)`));
    const copy = await b.store.getConversation({ agent: "assistant", instance: "dst", session: "restored" });
    const copied = await b.store.readRecords(copy.id);
    expect(copied.map((r) => [r.kind, r.kind === "conversation_created" ? undefined : r.payload])).toEqual(
      records.map((r) => [r.kind, r.kind === "conversation_created" ? undefined : r.payload]),
    );
    expect(Buffer.from((await b.store.getAttachment(attachments[1]!.digest)).data)).toEqual(large);

    // The imported history is the model's context there: it sees the images of the first message.
    const next = await harness(["send", "assistant/dst", "-s", "restored", "once more", "--wait", "--url", b.server.url]);
    expect(next.code).toBe(EXIT.ok);
    expect(next.stdout).toContain("You said: once more");

    // Again into the same session: refused, nothing changed.
    const again = await harness(["import", file, "--to", "assistant/dst", "-s", "restored", "--url", b.server.url]);
    expect(again.code).toBe(EXIT.refused);
    expect(again.stderr).toContain("conversation_exists, HTTP 409");
  });

  it("refuses a bad file before uploading anything: exit 3 naming the line", async () => {
    const file = join(dir, "bad.jsonl");
    const stdout = await harness(["export", "assistant/src", "--url", a.server.url]);
    expect(stdout.code).toBe(EXIT.ok);
    const lines = stdout.stdout.trim().split("\n");
    const record = JSON.parse(lines[2]!) as { record: { kind: string } };
    record.record.kind = "telepathy";
    writeFileSync(file, [lines[0], lines[1], JSON.stringify(record), ...lines.slice(3)].join("\n"));
    const run = await harness(["import", file, "--to", "assistant/bad", "--url", b.server.url]);
    expect(run.code).toBe(EXIT.refused);
    expect(run.stderr).toContain(`${file}: line 3: unknown record kind "telepathy" (invalid_export, HTTP 400)`);
    await expect(b.store.getConversation({ agent: "assistant", instance: "bad", session: "default" })).rejects.toMatchObject({ code: "conversation_not_found" });
    const missing = await harness(["import", join(dir, "nope.jsonl"), "--url", b.server.url]);
    expect(missing.code).toBe(EXIT.usage);
  });
});
