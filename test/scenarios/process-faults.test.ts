/**
 * The fault seam's process side: `HARNESS_FAULTS` rules, and a real `kill -9` of `npm start`'s
 * server at a named phase (the preload installs the hook), after which a restart over the same
 * data directory settles the submission once.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { faultHook, parseFaultRules } from "../../dev/faults/process-faults.ts";
import { EmbeddedServer } from "../../dev/soak/embedded-server.ts";
import { createClient } from "../../src/client/client.ts";
import { openSqliteStore } from "../../src/sqlite/index.ts";
import { freePort } from "../e2e/examples/support.ts";

const scratch = mkdtempSync(join(tmpdir(), "process-faults-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("HARNESS_FAULTS", () => {
  it("parses rules and names what is wrong", () => {
    expect(parseFaultRules('[{"phase":"claimed","action":"pause","ms":5,"match":"x"}]')).toEqual([
      { phase: "claimed", action: "pause", ms: 5, match: "x" },
    ]);
    expect(() => parseFaultRules('{"phase":"claimed"}')).toThrow(/JSON array/);
    expect(() => parseFaultRules('[{"phase":"nowhere","action":"crash"}]')).toThrow(/unknown phase nowhere/);
    expect(() => parseFaultRules('[{"phase":"claimed","action":"explode"}]')).toThrow(/unknown action explode/);
    expect(() => parseFaultRules('[{"phase":"claimed","action":"pause"}]')).toThrow(/pause needs ms/);
  });

  it("fires a rule once per submission, remembered in the directory across processes", async () => {
    const dir = mkdtempSync(join(scratch, "once-"));
    const lines: string[] = [];
    const rules = parseFaultRules('[{"phase":"claimed","action":"pause","ms":1,"match":"-a"}]');
    const hook = faultHook(rules, dir, (l) => lines.push(l));
    await hook("claimed", "s-a");
    await hook("claimed", "s-a");
    await hook("claimed", "s-b"); // no match
    await hook("reserved", "s-a"); // other phase
    // A second process (a fresh hook) over the same directory: already fired.
    await faultHook(rules, dir, (l) => lines.push(l))("claimed", "s-a");
    expect(lines).toEqual(["fault: pause at claimed of s-a"]);
    expect(readdirSync(dir)).toEqual(["claimed~s-a"]);
  });

  it("kill -9s npm start's server at the phase; a restart settles the submission once", { timeout: 60_000 }, async () => {
    const dataDir = mkdtempSync(join(scratch, "data-"));
    const server = new EmbeddedServer({
      port: await freePort(),
      dataDir,
      leaseMs: 500,
      env: {
        HARNESS_FAULTS: JSON.stringify([{ phase: "tool_ran", action: "crash" }]),
        HARNESS_FAULTS_DIR: mkdtempSync(join(scratch, "fired-")),
      },
    });
    await server.start();
    const client = createClient({ baseUrl: server.url });
    const { submissionId, conversationId } = await client.dispatch("assistant", "pf", { kind: "user", body: "what time is it?" });
    expect(await server.exited()).toBe("SIGKILL");
    expect(server.output).toContain(`fault: crash at tool_ran of ${submissionId}`);

    await server.start();
    const outcome = await client.dispatchAndWait("assistant", "pf", { kind: "user", body: "hello" });
    expect(outcome.status).toBe("succeeded");
    await server.stop();
    const store = openSqliteStore({ path: join(dataDir, "harness.db") });
    const crashed = await store.getSubmission(submissionId);
    const records = await store.readRecords(conversationId);
    await store.close();
    expect(crashed).toMatchObject({ status: "settled", attemptCount: 2, outcome: { status: "succeeded" } });
    expect(records.filter((r) => r.kind === "submission_settled")).toHaveLength(2);
    // The tool ran before the crash; its outcome never landed: the recovery closed the call.
    const outcomes = records.filter((r) => r.kind === "tool_outcome");
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]!.attemptId).not.toBe(records.find((r) => r.kind === "assistant_tool_call")!.attemptId);
  });
});
