import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT } from "../../../src/cli/program.ts";
import { serve, type ServerHandle } from "../../../src/server/server.ts";
import { bearerAuth } from "../../../src/http/bearer-auth.ts";
import { startTestServer, type TestServer } from "../../support/test-server.ts";
import { harness } from "./support.ts";

/** `harness followup`, and `--token` / `HARNESS_TOKEN` against a bearer-protected server, as a process. */

const TOKEN = "cli-test-token-0123456789";
let h: TestServer;
let guarded: ServerHandle;

beforeAll(async () => {
  h = await startTestServer();
  guarded = await serve(h.runtime, { port: 0, hostname: "127.0.0.1", log: () => {}, middleware: [bearerAuth({ token: TOKEN })] });
});
afterAll(async () => {
  await guarded?.close();
  await h?.close();
});

describe("harness followup", () => {
  it("queues a message for when the run in flight would stop (same submission); with nothing running: exit 3", async () => {
    const idle = await harness(["followup", "assistant/fu-1", "later", "--url", h.url]);
    expect(idle.code).toBe(EXIT.refused);
    expect(idle.stderr).toContain("no_run_in_flight");

    h.gate.close();
    const sent = await harness(["--json", "send", "assistant/fu-1", "[hold] first", "--url", h.url]);
    const { submissionId } = JSON.parse(sent.stdout) as { submissionId: string };
    await h.gate.entered();
    const follow = await harness(["--json", "followup", "assistant/fu-1", "and then this", "--url", h.url]);
    expect(follow).toMatchObject({ code: EXIT.ok, stderr: "" });
    expect(JSON.parse(follow.stdout)).toEqual({ delivered: "followup" });
    h.gate.release();
    await h.runtime.wait(submissionId);
    const tail = await harness(["tail", "assistant/fu-1", "--url", h.url]);
    expect(tail.stdout).toContain("› [followUp] and then this");
    expect(tail.stdout).toContain("You said: and then this");
    expect(tail.stdout.match(/— succeeded/g)).toHaveLength(1);
  });
});

describe("harness --token", () => {
  it("sends the token as a bearer token (flag or HARNESS_TOKEN); without it the server's 401 is exit 3", async () => {
    const flag = await harness(["send", "assistant/tok-1", "hello", "--wait", "--token", TOKEN, "--url", guarded.url]);
    expect(flag.code).toBe(EXIT.ok);
    expect(flag.stdout).toContain("You said: hello");
    const env = await harness(["ls", "assistant/tok-1", "--url", guarded.url], { HARNESS_TOKEN: TOKEN });
    expect(env.code).toBe(EXIT.ok);
    expect(env.stdout).toMatch(/succeeded/);
    const none = await harness(["ls", "assistant/tok-1", "--url", guarded.url]);
    expect(none.code).toBe(EXIT.refused);
    expect(none.stderr).toContain("unauthorized");
    const wrong = await harness(["send", "assistant/tok-1", "hi", "--token", "nope", "--url", guarded.url]);
    expect(wrong.code).toBe(EXIT.refused);
    // The token never shows in help.
    expect((await harness(["--help"], { HARNESS_TOKEN: TOKEN })).stdout).not.toContain(TOKEN);
  });
});
