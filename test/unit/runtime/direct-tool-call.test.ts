import { describe, expect, it } from "vitest";
import type { AgentDefinition } from "../../../src/agent/agent-definition.ts";
import { localModel } from "../../../src/agent/local-model.ts";
import { callToolDirectly } from "../../../src/runtime/direct-tool-call.ts";

const failing = {
  name: "explode",
  label: "Explode",
  description: "Always fails.",
  parameters: { type: "object" as const },
  execute: async () => {
    throw new Error("boom: no such order");
  },
};
const echo = {
  name: "echo",
  label: "Echo",
  description: "Answers its arguments.",
  parameters: { type: "object" as const },
  execute: async (_id: string, args: unknown) => ({ content: [{ type: "text" as const, text: JSON.stringify(args) }], details: { seen: args } }),
};
const definitions = new Map<string, AgentDefinition>([["ops", { initialize: ({ instance }) => ({ ...localModel(), systemPrompt: instance, tools: [failing, echo] }) }]]);
const knows = (name: string) => definitions.has(name);
const env = () => "";

describe("callToolDirectly", () => {
  it("is refused unless direct tool calls are on", async () => {
    await expect(callToolDirectly(false, definitions, env, { agent: "ops", instance: "i", toolName: "echo" }, knows)).rejects.toMatchObject({ code: "forbidden" });
  });

  it("runs the tool with the arguments, and answers a tool's throw as an error result", async () => {
    const ok = await callToolDirectly(true, definitions, env, { agent: "ops", instance: "i", toolName: "echo", args: { order: "A-17" } }, knows);
    expect(ok).toMatchObject({ toolName: "echo", isError: false, content: [{ type: "text", text: '{"order":"A-17"}' }], details: { seen: { order: "A-17" } } });
    const bad = await callToolDirectly(true, definitions, env, { agent: "ops", instance: "i", toolName: "explode" }, knows);
    expect(bad).toMatchObject({ toolName: "explode", isError: true, content: [{ type: "text", text: "boom: no such order" }] });
    await expect(callToolDirectly(true, definitions, env, { agent: "nobody", instance: "i", toolName: "echo" }, knows)).rejects.toMatchObject({ code: "unknown_agent" });
  });
});
