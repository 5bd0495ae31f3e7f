/**
 * `harness send --attach file` (ADR 0034): the CLI uploads each file (its type from the
 * extension), references them in the message, and the keyless model's reply names the image it
 * received; through a SigV4-checking server too (the binary upload is signed like every request).
 * An extension the CLI cannot type is a usage error (exit 2) before anything is sent.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT } from "../../../src/cli/program.ts";
import { localModel } from "../../../src/agent/local-model.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import { serve, type ServerHandle } from "../../../src/server/server.ts";
import { digestOf, PNG_1x1 } from "../../support/attachment-fixtures.ts";
import { sigv4Verifier } from "../../support/sigv4-verifier.ts";
import { harness } from "./support.ts";

const CREDS = { accessKeyId: "AKIACLITEST000000002", secretAccessKey: "cli/attach/secret/key/0000000000000000000" };
let runtime: Runtime;
let server: ServerHandle;
let signed: ServerHandle;
const dir = mkdtempSync(join(tmpdir(), "harness-attach-"));

beforeAll(async () => {
  runtime = createRuntime({
    agents: { assistant: { initialize: () => localModel({ chunkSize: 32 }) } },
    store: createMemoryStore(),
    flushPolicy: { bytes: 0, intervalMs: 0 },
    onObserverError: () => {},
  });
  await runtime.start();
  server = await serve(runtime, { port: 0, hostname: "127.0.0.1", log: () => {} });
  signed = await serve(runtime, { port: 0, hostname: "127.0.0.1", log: () => {}, middleware: [sigv4Verifier(CREDS, "eu-west-1")] });
  writeFileSync(join(dir, "pixel.png"), PNG_1x1);
  writeFileSync(join(dir, "notes.md"), "# notes\nbring the umbrella");
  writeFileSync(join(dir, "data.bin"), "??");
});

afterAll(async () => {
  await signed.close();
  await server.close();
  await runtime.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("harness send --attach", () => {
  it("uploads the files, and the model's reply names the image it received and quotes the text file", async () => {
    const run = await harness(["send", "assistant/cli-att", "what do you see?", "--attach", join(dir, "pixel.png"), "-a", join(dir, "notes.md"), "--wait", "--url", server.url]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(EXIT.ok);
    expect(run.stdout).toContain("I received 1 image:");
    expect(run.stdout).toContain(`image/png, ${PNG_1x1.length} bytes, ${digestOf(PNG_1x1)}`);
    expect(run.stdout).toContain("bring the umbrella");
  });

  it("signs the binary upload with --sigv4", async () => {
    const env = { AWS_ACCESS_KEY_ID: CREDS.accessKeyId, AWS_SECRET_ACCESS_KEY: CREDS.secretAccessKey };
    const run = await harness(["--sigv4", "--region", "eu-west-1", "send", "assistant/cli-att-sig", "signed", "--attach", join(dir, "pixel.png"), "--wait", "--url", signed.url], env);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(EXIT.ok);
    expect(run.stdout).toContain(digestOf(PNG_1x1));
  });

  it("an extension it cannot type, or a missing file, is a usage error and nothing is sent", async () => {
    const unknown = await harness(["send", "assistant/cli-att-bad", "x", "--attach", join(dir, "data.bin"), "--url", server.url]);
    expect(unknown.code).toBe(EXIT.usage);
    expect(unknown.stderr).toMatch(/cannot tell the type of .*data\.bin: use one of \.png/);
    const missing = await harness(["send", "assistant/cli-att-bad", "x", "--attach", join(dir, "nope.png"), "--url", server.url]);
    expect(missing.code).toBe(EXIT.usage);
    expect(missing.stderr).toMatch(/cannot read .*nope\.png/);
    await expect(runtime.conversation({ agent: "assistant", instance: "cli-att-bad" })).rejects.toMatchObject({ code: "conversation_not_found" });
  });
});
