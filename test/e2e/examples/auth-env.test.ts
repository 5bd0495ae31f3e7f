/**
 * Auth without code, as users run it (ADR 0043): `npm start` with AUTH_ISSUER/AUTH_AUDIENCE (a token
 * issuer on loopback) and HARNESS_BEARER_TOKEN: a user's signed token reaches their own instance
 * only, the operator's token every one, no token nothing; a half-made configuration refuses to start.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startOidcIssuer, type OidcIssuer } from "../../support/oidc-issuer.ts";
import { killExamples, startExampleProcess, stopExample, ROOT } from "./support.ts";
import { spawnSync } from "node:child_process";

let oidc: OidcIssuer;
beforeAll(async () => {
  oidc = await startOidcIssuer();
});
afterAll(() => oidc.close());
afterEach(killExamples);

describe("npm start with auth from the environment", () => {
  it("users reach their own instance with a signed token; the operator reaches all; anonymous nothing", async () => {
    const ex = await startExampleProcess(["start"], { AUTH_ISSUER: oidc.url, AUTH_AUDIENCE: "chat-app", HARNESS_BEARER_TOKEN: "operator-secret", DATA_DIR: `/tmp/harness-auth-env-${process.pid}` });
    expect(ex.output()).toMatch(/auth: operator token \+ JWT from http:\/\/127\.0\.0\.1:\d+/);
    const alice = await oidc.sign("chat-app", { sub: "alice" });
    const send = (instance: string, token?: string) =>
      fetch(`${ex.url}/agents/assistant/${instance}?wait=true`, {
        method: "POST",
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
        body: JSON.stringify({ kind: "user", body: "hello" }),
      });
    const own = await send("alice", alice);
    expect(own.status).toBe(200);
    expect(((await own.json()) as { status: string }).status).toBe("succeeded");
    expect((await send("bob", alice)).status).toBe(403);
    expect((await send("bob")).status).toBe(401);
    expect((await send("bob", await oidc.sign("another-app", { sub: "alice" }))).status).toBe(401);
    expect((await send("bob", "operator-secret")).status).toBe(200);
    expect((await fetch(`${ex.url}/healthz`)).status).toBe(200);
    await stopExample(ex);
  });

  it("refuses to start with an issuer and no audience, naming the variable", () => {
    const run = spawnSync(process.execPath, ["--disable-warning=ExperimentalWarning", "examples/basic/main.ts"], {
      cwd: ROOT,
      env: { ...process.env, PORT: "0", AUTH_ISSUER: oidc.url, AUTH_AUDIENCE: "", MODEL: "" },
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/AUTH_ISSUER is set but AUTH_AUDIENCE is not/);
  });
});
