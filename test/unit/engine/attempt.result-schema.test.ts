/**
 * An agent's `resultSchema` is the default of its dispatches: a reply that validates is the
 * settled `result`; a dispatch's own schema wins; one that does not validate gets a corrective
 * turn against the agent's schema.
 */
import { describe, expect, it } from "vitest";
import * as schema from "../../../src/agent/tool-schema.ts";
import { scriptedAgent, startTestServer } from "../../support/runtime-kit.ts";

const severity = schema.obj({ severity: schema.oneOf(["low", "high"]) });

describe("AgentDefinition.resultSchema", () => {
  it("settles with the parsed result; a dispatch's own schema wins; a wrong reply is corrected against the agent's schema", async () => {
    const triage = scriptedAgent([
      [{ text: '{"severity":"high"}' }],
      [{ text: '{"ok":true}' }],
      [{ text: "it looks bad" }],
      [{ text: '```json\n{"severity":"low"}\n```' }],
    ]);
    const h = await startTestServer({ agents: { triage: { ...triage.definition, resultSchema: severity } } });
    const dispatch = async (body: string, resultSchema?: unknown) => {
      const { submissionId } = await h.runtime.dispatch({ agent: "triage", instance: "t1", message: { kind: "user", body, ...(resultSchema ? { resultSchema } : {}) } });
      return h.runtime.wait(submissionId);
    };
    expect(await dispatch("the build is red")).toMatchObject({ status: "succeeded", result: { severity: "high" } });
    expect(await dispatch("is it ok?", { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] })).toMatchObject({
      status: "succeeded",
      result: { ok: true },
    });
    expect(await dispatch("and now?")).toMatchObject({ status: "succeeded", result: { severity: "low" } });
    const correction = triage.scripted.calls[3]!.messages.at(-1) as { content: unknown };
    expect(JSON.stringify(correction.content)).toContain("severity");
  });
});
