import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT } from "../../../src/cli/program.ts";
import { serve, type ServerHandle } from "../../../src/server/server.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import { localModel } from "../../../src/agent/local-model.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { harness, harnessProcess } from "./support.ts";

/**
 * The CLI's first-hour failures (issue 26): each says what is wrong and what to do, with the exit
 * status scripts branch on: 2 for a usage error naming the flag, 4 for a harness that cannot be
 * reached (naming the URL); `--version`; and `tail --follow` waiting for a conversation to start.
 */

let runtime: Runtime;
let server: ServerHandle;

beforeAll(async () => {
  runtime = createRuntime({
    agents: { assistant: { initialize: () => localModel() } },
    store: createMemoryStore(),
    flushPolicy: { bytes: 0, intervalMs: 0 },
  });
  await runtime.start();
  server = await serve(runtime, { port: 0, hostname: "127.0.0.1" });
});

afterAll(async () => {
  await server.close();
  await runtime.close();
});

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe("harness CLI: failures that say what to do", () => {
  it("--version prints the package's version and exits 0", async () => {
    const { version } = JSON.parse(readFileSync(join(import.meta.dirname, "../../../package.json"), "utf8")) as { version: string };
    for (const flag of ["--version", "-V"]) {
      expect(await harness([flag])).toEqual({ code: EXIT.ok, stdout: `${version}\n`, stderr: "" });
    }
  });

  it("--url that is not an http(s) URL: exit 2 naming the flag (or HARNESS_URL), nothing sent", async () => {
    const bad = await harness(["--url", "notaurl", "send", "assistant/x", "hi"]);
    expect(bad.code).toBe(EXIT.usage);
    expect(bad.stderr).toBe(`error: --url expects the harness's base URL, such as http://127.0.0.1:8484; got "notaurl"\n`);
    const scheme = await harness(["ls", "assistant/x", "--url", "ftp://127.0.0.1:8484"]);
    expect(scheme.code).toBe(EXIT.usage);
    expect(scheme.stderr).toContain("--url expects an http:// or https:// URL");
    const fromEnv = await harness(["tail", "assistant/x"], { HARNESS_URL: "localhost:8484" });
    expect(fromEnv.code).toBe(EXIT.usage);
    expect(fromEnv.stderr).toContain('HARNESS_URL expects');
    expect(fromEnv.stderr).toContain('"localhost:8484"');
  });

  it("--sigv4 with no region to sign for: exit 2 naming --region; a function URL's own region or AWS_REGION is enough", async () => {
    const missing = await harness(["--sigv4", "send", "assistant/x", "hi", "--url", server.url]);
    expect(missing.code).toBe(EXIT.usage);
    expect(missing.stderr).toMatch(/^error: --sigv4 needs a region to sign for: .*pass --region <region> \(or set AWS_REGION\)\n$/);
    // With a region the request goes out (and reaches a server that does not check signatures).
    const env = { AWS_ACCESS_KEY_ID: "AKIAEXAMPLE000000001", AWS_SECRET_ACCESS_KEY: "secret" };
    const given = await harness(["--sigv4", "--region", "eu-west-1", "send", "assistant/sig", "hi", "--url", server.url], env);
    expect(given.code, given.stderr).not.toBe(EXIT.usage);
    const fromEnv = await harness(["--sigv4", "send", "assistant/sig", "hi", "--url", server.url], { ...env, AWS_REGION: "eu-west-1" });
    expect(fromEnv.code, fromEnv.stderr).not.toBe(EXIT.usage);
  });

  it("a harness that is not there: exit 4, one line naming the URL and how to point elsewhere", async () => {
    const port = await closedPort();
    const down = await harness(["send", "assistant/x", "hi", "--url", `http://127.0.0.1:${port}`]);
    expect(down.code).toBe(EXIT.transport);
    expect(down.stderr).toMatch(
      new RegExp(`^error: cannot reach the harness at http://127\\.0\\.0\\.1:${port}/agents/assistant/x: fetch failed: connect ECONNREFUSED [^\\n]+ \\(is it running\\? --url or HARNESS_URL points elsewhere\\)\\n$`),
    );
  });

  it("tail --follow waits for a conversation that does not exist yet, then shows it live", async () => {
    const tail = harnessProcess(["tail", "assistant/later", "--follow", "--url", server.url]);
    try {
      await expect.poll(() => tail.stderr(), { timeout: 15_000 }).toContain("waiting for assistant/later (session default) to start");
      expect(tail.exitCode()).toBeNull();
      const outcome = await runtime.wait((await runtime.dispatch({ agent: "assistant", instance: "later", message: { kind: "user", body: "hello late" } })).submissionId);
      expect(outcome.status).toBe("succeeded");
      await expect.poll(() => tail.stdout(), { timeout: 15_000 }).toContain("You said: hello late");
      expect(tail.exitCode()).toBeNull();
    } finally {
      tail.kill();
    }
    // Without --follow a conversation that does not exist is a refusal (exit 3), as before.
    const once = await harness(["tail", "assistant/never", "--url", server.url]);
    expect(once.code).toBe(EXIT.refused);
    expect(once.stderr).toContain("conversation_not_found");
  });
});
