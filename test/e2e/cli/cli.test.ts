import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT } from "../../../src/cli/program.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { serve, type ServerHandle } from "../../../src/server/server.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import { streamBlocks } from "../../../src/agent/block-stream.ts";
import { localModel } from "../../../src/agent/local-model.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { sigv4Verifier } from "../../support/sigv4-verifier.ts";
import { Gate, gatedLocalModel } from "../../support/test-server.ts";
import { harness } from "./support.ts";

let runtime: Runtime;
let server: ServerHandle;
/** The same runtime behind a SigV4 verifier, as an AWS_IAM function URL checks requests. */
let signedServer: ServerHandle;
let url: string;
const CREDS = { accessKeyId: "AKIACLITEST000000001", secretAccessKey: "cli/test/secret/key/000000000000000000000" };
const gate = new Gate();
const dir = mkdtempSync(join(tmpdir(), "harness-cli-"));

beforeAll(async () => {
  runtime = createRuntime({
    agents: {
      assistant: { initialize: () => ({ ...gatedLocalModel(gate) }) },
      broken: {
        initialize: () => {
          throw new Error("no model configured");
        },
      },
      reporter: {
        initialize: () => ({
          model: localModel().model,
          streamFn: (m) => streamBlocks(m, () => [{ type: "text", text: '{"verdict":"ok","score":3}' }]),
        }),
      },
    },
    store: createMemoryStore(),
    flushPolicy: { bytes: 0, intervalMs: 0 },
    onObserverError: () => {},
  });
  await runtime.start();
  server = await serve(runtime, { port: 0, hostname: "127.0.0.1", log: () => {} });
  signedServer = await serve(runtime, { port: 0, hostname: "127.0.0.1", log: () => {}, middleware: [sigv4Verifier(CREDS, "eu-west-1")] });
  url = server.url;
});

afterAll(async () => {
  gate.release();
  await signedServer.close();
  await server.close();
  await runtime.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("harness CLI", () => {
  it("send admits and prints the ids; --json prints them as JSON", async () => {
    const plain = await harness(["send", "assistant/cli-1", "hello", "--url", url]);
    expect(plain).toMatchObject({ code: EXIT.ok, stderr: "" });
    expect(plain.stdout).toMatch(/^admitted \S+ \(conversation \S+\)\n$/);

    const json = await harness(["--json", "send", "assistant/cli-1", "again"], { HARNESS_URL: url });
    expect(json.code).toBe(EXIT.ok);
    const ids = JSON.parse(json.stdout) as { submissionId: string; conversationId: string };
    expect(typeof ids.submissionId).toBe("string");
    expect(typeof ids.conversationId).toBe("string");
  });

  it("send --wait streams the reply and exits 0 on success, 1 on a failed settlement", async () => {
    const ok = await harness(["send", "assistant/cli-2", "what is new", "--wait", "--url", url]);
    expect(ok.code).toBe(EXIT.ok);
    expect(ok.stdout).toContain("› what is new");
    expect(ok.stdout).toContain("You said: what is new");
    expect(ok.stdout).toContain("— succeeded");

    const failed = await harness(["send", "broken/cli-2", "hi", "--wait", "--url", url]);
    expect(failed.code).toBe(EXIT.settledFailed);
    expect(failed.stdout).toContain("— failed [run_failed] agent broken: initialize threw: Error: no model configured");

    const json = await harness(["send", "broken/cli-2", "hi again", "--wait", "--json", "--url", url]);
    expect(json.code).toBe(EXIT.settledFailed);
    expect(JSON.parse(json.stdout)).toMatchObject({ status: "failed", errorCode: "run_failed" });
  });

  it("send --schema asks for a structured result and prints it", async () => {
    const schema = join(dir, "verdict.json");
    writeFileSync(schema, JSON.stringify({ type: "object", required: ["verdict"], properties: { verdict: { type: "string" } } }));
    const run = await harness(["send", "reporter/cli-3", "judge", "--wait", "--schema", schema, "--url", url]);
    expect(run.code).toBe(EXIT.ok);
    expect(run.stdout).toContain('"verdict": "ok"');

    const missing = await harness(["send", "reporter/cli-3", "judge", "--schema", join(dir, "nope.json"), "--url", url]);
    expect(missing.code).toBe(EXIT.usage);
    expect(missing.stderr).toContain("cannot read schema file");
  });

  it("tail prints the conversation and ends when the session is idle; --json prints one record per line", async () => {
    await harness(["send", "assistant/cli-4", "first", "--wait", "--url", url]);
    const tail = await harness(["tail", "assistant/cli-4", "--url", url]);
    expect(tail.code).toBe(EXIT.ok);
    expect(tail.stdout).toContain("› first");
    expect(tail.stdout).toContain("You said: first");

    const json = await harness(["tail", "assistant/cli-4", "--json", "--url", url]);
    const records = json.stdout.trim().split("\n").map((l) => JSON.parse(l) as ConversationRecord);
    expect(records[0]!.kind).toBe("conversation_created");
    expect(records.at(-1)!.kind).toBe("submission_settled");
    const from = await harness(["tail", "assistant/cli-4", "--json", "--from", records.at(-2)!.id, "--url", url]);
    expect(from.stdout.trim().split("\n")).toHaveLength(1);
  });

  it("steer reaches a run in flight; with nothing running it is refused with exit 3 and the server's code", async () => {
    const idle = await harness(["steer", "assistant/cli-5", "too late", "--url", url]);
    expect(idle.code).toBe(EXIT.refused);
    expect(idle.stderr).toContain("no_run_in_flight");

    gate.close();
    const sent = await harness(["--json", "send", "assistant/cli-5", "[hold] start", "--url", url]);
    const { submissionId } = JSON.parse(sent.stdout) as { submissionId: string };
    await gate.entered();
    const steer = await harness(["steer", "assistant/cli-5", "change of plan", "--url", url]);
    expect(steer).toMatchObject({ code: EXIT.ok, stderr: "" });
    gate.release();
    await runtime.wait(submissionId);
    const tail = await harness(["tail", "assistant/cli-5", "--url", url]);
    expect(tail.stdout).toContain("› [steer] change of plan");
    expect(tail.stdout).toContain("You said: change of plan");
  });

  it("--sigv4 signs every request (the streaming GET too) with credentials from the AWS default chain", async () => {
    const env = { AWS_ACCESS_KEY_ID: CREDS.accessKeyId, AWS_SECRET_ACCESS_KEY: CREDS.secretAccessKey };
    const signed = await harness(["--sigv4", "--region", "eu-west-1", "send", "assistant/cli-sig", "signed hello", "--wait", "--url", signedServer.url], env);
    expect(signed.stderr).toBe("");
    expect(signed.code).toBe(EXIT.ok);
    expect(signed.stdout).toContain("You said: signed hello");

    const unsigned = await harness(["send", "assistant/cli-sig", "hi", "--url", signedServer.url], env);
    expect(unsigned.code).toBe(EXIT.refused);
    expect(unsigned.stderr).toContain("invalid_signature");
  });

  it("tells a usage error (2) from a refusal (3) and an unreachable server (4)", async () => {
    expect((await harness(["send", "no-slash", "hi", "--url", url])).code).toBe(EXIT.usage);
    expect((await harness(["frobnicate"])).code).toBe(EXIT.usage);
    const unknown = await harness(["send", "nobody/x", "hi", "--url", url]);
    expect(unknown.code).toBe(EXIT.refused);
    expect(unknown.stderr).toContain("unknown_agent");
    const down = await harness(["send", "assistant/x", "hi", "--url", "http://127.0.0.1:9"]);
    expect(down.code).toBe(EXIT.transport);
    expect(down.stderr).toContain("cannot reach the harness at http://127.0.0.1:9");
    expect((await harness(["--help"])).code).toBe(EXIT.ok);
  });
});
