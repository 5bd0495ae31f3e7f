import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ConversationRecordOf } from "../../../src/protocol/records.ts";
import { parseSse, recordsOf } from "../../support/test-server.ts";
import { killExamples, ROOT, startExampleProcess } from "./support.ts";

/** `npm run example -- multitenant` as a process, and its load script as a process against it. */

let dataDir: string;
beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), "harness-multitenant-"));
});
afterEach(killExamples);
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

interface Figures {
  orderedPerSession: boolean;
  overlapsInSession: number;
  sessionsRanInParallel: boolean;
  messages: { session: string; index: number; status: string }[];
  runs: { submissionId: string; startedAt: number; settledAt: number }[];
}

describe("examples/multitenant", () => {
  it("a user reaches its token's tenant only (a fork's target too), unknown tenants are refused, and the load script: ordered queues per session, parallel across sessions", async () => {
    const ex = await startExampleProcess(["run", "example", "--", "multitenant"], { DATA_DIR: join(dataDir, "mt"), REPLY_MS: "400", HARNESS_BEARER_TOKEN: "operator-secret" });
    expect(ex.output()).toContain("auth: operator token + JWT from this server's dev issuer");

    // The dev issuer: an OIDC discovery document and a key set, as a real issuer serves them.
    const discovery = (await (await fetch(`${ex.url}/.well-known/openid-configuration`)).json()) as { issuer: string; jwks_uri: string };
    expect(discovery).toMatchObject({ issuer: ex.url, jwks_uri: `${ex.url}/.well-known/jwks.json` });
    expect(((await (await fetch(discovery.jwks_uri)).json()) as { keys: { alg: string }[] }).keys).toMatchObject([{ alg: "ES256" }]);
    const mint = (body: unknown) => fetch(`${ex.url}/dev/token`, { method: "POST", body: JSON.stringify(body) });
    const tokenOf = async (tenant: string, user: string) => {
      const res = await mint({ tenant, user });
      expect(res.status).toBe(201);
      return ((await res.json()) as { token: string }).token;
    };
    const acme = await tokenOf("acme", "ann");
    const globex = await tokenOf("globex", "gus");
    const noTenant = await mint({ tenant: "initech", user: "ivy" });
    expect(noTenant.status).toBe(400);
    expect(await noTenant.json()).toEqual({ error: 'unknown tenant "initech"', code: "invalid_request" });
    for (const bad of [{ tenant: "acme", user: "a b" }, { tenant: "acme" }, [], "not json"]) {
      const res = bad === "not json" ? await fetch(`${ex.url}/dev/token`, { method: "POST", body: "{" }) : await mint(bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(await res.json()).toMatchObject({ code: "invalid_request", error: expect.any(String) });
    }

    const as = (token: string | undefined, path: string, body?: unknown) =>
      fetch(`${ex.url}${path}`, {
        method: body === undefined ? "GET" : "POST",
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const ask = async (token: string, tenant: string, session: string, body: string) => {
      const res = await as(token, `/agents/concierge/${tenant}?wait=true`, { kind: "user", body, session });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ status: "succeeded" });
      const log = await as(token, `/agents/concierge/${tenant}?session=${session}`);
      const done = recordsOf(parseSse(await log.text())).filter((r) => r.kind === "assistant_message_completed") as ConversationRecordOf<"assistant_message_completed">[];
      return JSON.stringify(done.at(-1)!.payload);
    };
    expect(await ask(acme, "acme", "support", "where is my order?")).toContain("Acme Corp support");
    expect(await ask(globex, "globex", "support", "where is my order?")).toContain("the Globex team");

    // No token: 401 with a challenge; a token of another issuer's key (a forged one): 401.
    const anonymous = await as(undefined, "/agents/concierge/acme", { kind: "user", body: "hi" });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toBe('Bearer realm="harness"');
    const [head, payload] = acme.split(".");
    const forged = `${head}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, "base64url").toString()), tenant: "globex" })).toString("base64url")}.${acme.split(".")[2]}`;
    expect((await as(forged, "/agents/concierge/globex", { kind: "user", body: "hi" })).status).toBe(401);

    // Another tenant, or an instance that is no tenant: 403, read or write, whoever asks.
    const refused = async (res: Response) => {
      expect(res.status).toBe(403);
      expect(await res.json()).toMatchObject({ code: "forbidden" });
    };
    await refused(await as(acme, "/agents/concierge/globex", { kind: "user", body: "hi" }));
    await refused(await as(acme, "/agents/concierge/globex?session=support"));
    await refused(await as(acme, "/agents/concierge/initech", { kind: "user", body: "hi" }));
    await refused(await as(acme, "/agents/concierge/initech"));
    await refused(await as("operator-secret", "/agents/concierge/initech", { kind: "user", body: "hi" }));

    // A fork writes where its body says (issue 33, point 8): checked there as a write (ADR 0043).
    const log = recordsOf(parseSse(await (await as(acme, "/agents/concierge/acme?session=support")).text()));
    const fork = (body: Record<string, unknown>) => as(acme, "/agents/concierge/acme/fork?session=support", { fromRecordId: log.at(-1)!.id, ...body });
    await refused(await fork({ instance: "initech", session: "stolen" }));
    await refused(await fork({ instance: "globex", session: "stolen", message: { kind: "user", body: "what did acme ask?" } }));
    // Nothing was copied: globex's own user finds no such conversation.
    const globexStolen = await as(globex, "/agents/concierge/globex?session=stolen");
    expect(globexStolen.status).toBe(404);
    expect(await globexStolen.json()).toMatchObject({ code: "conversation_not_found" });
    const withinAcme = await fork({ session: "edited" });
    expect(withinAcme.status, await withinAcme.clone().text()).toBe(201);
    expect(await withinAcme.json()).toMatchObject({ agent: "concierge", instance: "acme", session: "edited", conversationId: expect.any(String) });
    // The operator reaches every tenant.
    expect((await as("operator-secret", "/agents/concierge/globex?session=support")).status).toBe(200);

    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--disable-warning=ExperimentalWarning", "examples/multitenant/load.ts", "--url", ex.url, "--messages", "2", "--json"],
      { cwd: ROOT, timeout: 60_000 },
    );
    const figures = JSON.parse(stdout) as Figures;
    expect(figures.messages).toHaveLength(6);
    expect(figures.messages.every((m) => m.status === "succeeded")).toBe(true);
    expect(figures.orderedPerSession).toBe(true);
    expect(figures.overlapsInSession).toBe(0);
    expect(figures.sessionsRanInParallel).toBe(true);
    // Check the script's reading against the spans it reports: the second run of a session
    // started after the first settled; the first runs of the sessions overlapped.
    const span = (id: string) => figures.runs.find((r) => r.submissionId.endsWith(id))!;
    expect(span("acme-support-2").startedAt).toBeGreaterThanOrEqual(span("acme-support-1").settledAt);
    expect(span("acme-billing-1").startedAt).toBeLessThan(span("acme-support-1").settledAt);
  }, 90_000);

  it("refuses to start on a non-loopback HOST (anyone could mint a token) or with AUTH_* set (it issues its own tokens)", async () => {
    const start = (env: Record<string, string>) =>
      promisify(execFile)(process.execPath, ["--disable-warning=ExperimentalWarning", "examples/multitenant/main.ts"], {
        cwd: ROOT,
        env: { ...process.env, PORT: "0", DATA_DIR: join(dataDir, "refused"), ...env },
        timeout: 30_000,
      }).then(
        () => ({ code: 0, stderr: "" }),
        (err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }),
      );
    const open = await start({ HOST: "0.0.0.0" });
    expect(open.code).toBe(1);
    expect(open.stderr).toContain("multitenant example: HOST=0.0.0.0: this example mints a token for anyone who asks");
    const issuer = await start({ AUTH_ISSUER: "https://issuer.example.com", AUTH_AUDIENCE: "x" });
    expect(issuer.code).toBe(1);
    expect(issuer.stderr).toContain("AUTH_ISSUER is set, but this example issues and verifies its own tokens");
  });

  it("the load script refuses a non-loopback URL and unbounded counts", async () => {
    const run = (args: string[]) =>
      promisify(execFile)(process.execPath, ["--disable-warning=ExperimentalWarning", "examples/multitenant/load.ts", ...args], { cwd: ROOT }).then(
        () => 0,
        (err: { code: number; stderr: string }) => {
          expect(err.stderr).toMatch(/^load: /);
          return err.code;
        },
      );
    expect(await run(["--url", "http://example.com:8489"])).toBe(2);
    expect(await run(["--messages", "1000"])).toBe(2);
    expect(await run(["--timeout-ms", "99999999"])).toBe(2);
  });
});
