/**
 * The `harness` command (a process) against a server with authentication on (ADR 0043, issue 34):
 * an OIDC issuer's signed token in HARNESS_TOKEN (or --token) reaches every command, the streams'
 * reconnects included; a 401 prints one line saying which variable to set.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jwtAuthenticator } from "../../../src/auth/jwt-authenticator.ts";
import { EXIT } from "../../../src/cli/program.ts";
import { startOidcIssuer, type OidcIssuer } from "../../support/oidc-issuer.ts";
import { startTestServer, type TestServer } from "../../support/test-server.ts";
import { harness, harnessProcess } from "./support.ts";

const AUDIENCE = "harness-cli-test";
let issuer: OidcIssuer;
let h: TestServer;
let token = "";
let dir = "";
/** Stream connections (`GET /agents/assistant/alice`) that carried alice's token. */
let aliceStreams = 0;

beforeAll(async () => {
  issuer = await startOidcIssuer();
  const jwt = jwtAuthenticator({ issuer: issuer.url, audience: AUDIENCE });
  h = await startTestServer({
    // Short streams: a followed run reconnects several times.
    maxStreamMs: 200,
    retryMs: 20,
    auth: {
      authenticate: async (request) => {
        const principal = await jwt(request);
        const url = new URL(request.url);
        if (principal?.id === "alice" && request.method === "GET" && url.pathname === "/agents/assistant/alice") aliceStreams++;
        return principal;
      },
    },
  });
  token = await issuer.sign(AUDIENCE, { sub: "alice" });
  dir = mkdtempSync(join(tmpdir(), "harness-cli-auth-"));
});
afterAll(async () => {
  await h?.close();
  await issuer?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const until = (check: () => boolean, ms = 20_000) =>
  new Promise<void>((resolve, reject) => {
    const deadline = Date.now() + ms;
    const tick = () => (check() ? resolve() : Date.now() > deadline ? reject(new Error("until: timed out")) : setTimeout(tick, 20));
    tick();
  });

describe("harness with authentication on", () => {
  it("HARNESS_TOKEN reaches send --wait, ls, compact, export and import; --token too", async () => {
    const env = { HARNESS_TOKEN: token };
    const sent = await harness(["send", "assistant/alice", "hello", "--wait", "--url", h.url], env);
    expect(sent).toMatchObject({ code: EXIT.ok });
    expect(sent.stdout).toContain("You said: hello");
    const ls = await harness(["ls", "assistant/alice", "--url", h.url], env);
    expect(ls.code).toBe(EXIT.ok);
    expect(ls.stdout).toMatch(/succeeded/);
    const compact = await harness(["--json", "compact", "assistant/alice", "--url", h.url], env);
    expect(compact.code).toBe(EXIT.ok);
    const file = join(dir, "alice.jsonl");
    expect((await harness(["export", "assistant/alice", "-o", file, "--url", h.url], env)).code).toBe(EXIT.ok);
    const imported = await harness(["import", file, "--to", "assistant/alice", "--session", "copy", "--url", h.url], env);
    expect(imported.code, imported.stderr).toBe(EXIT.ok);
    const flag = await harness(["ls", "assistant/alice", "--session", "copy", "--token", token, "--url", h.url]);
    expect(flag.code).toBe(EXIT.ok);
    // Signed in is not everything: alice's token does not reach bob's instance (403, no token hint).
    const other = await harness(["ls", "assistant/bob", "--url", h.url], env);
    expect(other.code).toBe(EXIT.refused);
    expect(other.stderr).toContain("forbidden");
    expect(other.stderr).not.toContain("HARNESS_TOKEN");
  });

  it("tail follows a run across several stream reconnects, each carrying the token", async () => {
    h.gate.close();
    const sent = await harness(["--json", "send", "assistant/alice", "[hold] a reply long enough to stream", "--url", h.url], { HARNESS_TOKEN: token });
    expect(sent.code).toBe(EXIT.ok);
    await h.gate.entered();
    const before = aliceStreams;
    const tail = harnessProcess(["tail", "assistant/alice", "--url", h.url], { HARNESS_TOKEN: token });
    try {
      // The server ends each stream after 200 ms while the run is held: the tail reconnects.
      await until(() => aliceStreams >= before + 3);
      h.gate.release();
      await until(() => tail.exitCode() !== null);
      expect(tail.exitCode()).toBe(EXIT.ok);
      expect(tail.stdout()).toContain("You said: [hold] a reply long enough to stream");
      expect(tail.stderr()).toBe("");
    } finally {
      tail.kill();
    }
  });

  it("a 401 prints one line naming HARNESS_TOKEN: without a token, and with one the server refuses", async () => {
    const none = await harness(["send", "assistant/alice", "hi", "--url", h.url]);
    expect(none.code).toBe(EXIT.refused);
    const lines = none.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/unauthorized.*HTTP 401.*set HARNESS_TOKEN/);

    const expired = await issuer.sign(AUDIENCE, { sub: "alice" }, { expiresIn: Math.floor(Date.now() / 1000) - 600 });
    for (const args of [["tail", "assistant/alice"], ["ls", "assistant/alice"]]) {
      const refused = await harness([...args, "--url", h.url], { HARNESS_TOKEN: expired });
      expect(refused.code).toBe(EXIT.refused);
      expect(refused.stderr.trim().split("\n")).toHaveLength(1);
      expect(refused.stderr).toMatch(/did not accept the token from --token or HARNESS_TOKEN: set HARNESS_TOKEN/);
    }
  });

  it("--token with --sigv4 is a usage error (both would set the Authorization header)", async () => {
    const both = await harness(["ls", "assistant/alice", "--sigv4", "--region", "eu-west-1", "--token", token, "--url", h.url]);
    expect(both.code).toBe(EXIT.usage);
    expect(both.stderr).toContain("--token and --sigv4");
  });
});
