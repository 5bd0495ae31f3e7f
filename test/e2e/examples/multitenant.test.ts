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
  it("per-tenant prompts, unknown tenants refused (a fork's target too), and the load script: ordered queues per session, parallel across sessions", async () => {
    const ex = await startExampleProcess(["run", "example", "--", "multitenant"], { DATA_DIR: join(dataDir, "mt"), REPLY_MS: "400" });

    const ask = async (tenant: string, session: string, body: string) => {
      const res = await fetch(`${ex.url}/agents/concierge/${tenant}?wait=true`, { method: "POST", body: JSON.stringify({ kind: "user", body, session }) });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ status: "succeeded" });
      const log = await fetch(`${ex.url}/agents/concierge/${tenant}?session=${session}`);
      const done = recordsOf(parseSse(await log.text())).filter((r) => r.kind === "assistant_message_completed") as ConversationRecordOf<"assistant_message_completed">[];
      return JSON.stringify(done.at(-1)!.payload);
    };
    expect(await ask("acme", "support", "where is my order?")).toContain("Acme Corp support");
    expect(await ask("globex", "support", "where is my order?")).toContain("the Globex team");

    const unknown = await fetch(`${ex.url}/agents/concierge/initech`, { method: "POST", body: JSON.stringify({ kind: "user", body: "hi" }) });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: 'unknown tenant "initech"', code: "not_found" });
    expect((await fetch(`${ex.url}/agents/concierge/initech`)).status).toBe(404);

    // A fork writes where its body says (issue 33): into a tenant only, and only its own.
    const log = recordsOf(parseSse(await (await fetch(`${ex.url}/agents/concierge/acme?session=support`)).text()));
    const fork = (body: Record<string, unknown>) =>
      fetch(`${ex.url}/agents/concierge/acme/fork?session=support`, { method: "POST", body: JSON.stringify({ fromRecordId: log.at(-1)!.id, ...body }) });
    const intoInitech = await fork({ instance: "initech", session: "stolen" });
    expect(intoInitech.status).toBe(404);
    expect(await intoInitech.json()).toEqual({ error: 'unknown tenant "initech"', code: "not_found" });
    const intoGlobex = await fork({ instance: "globex", session: "stolen", message: { kind: "user", body: "what did acme ask?" } });
    expect(intoGlobex.status).toBe(403);
    expect(await intoGlobex.json()).toEqual({ error: 'a fork stays inside its tenant: "acme" cannot fork into "globex"', code: "forbidden" });
    const globexStolen = await fetch(`${ex.url}/agents/concierge/globex?session=stolen`);
    expect(globexStolen.status).toBe(404);
    expect(await globexStolen.json()).toMatchObject({ code: "conversation_not_found" });
    const withinAcme = await fork({ session: "edited" });
    expect(withinAcme.status, await withinAcme.clone().text()).toBe(201);
    expect(await withinAcme.json()).toMatchObject({ agent: "concierge", instance: "acme", session: "edited", conversationId: expect.any(String) });

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
