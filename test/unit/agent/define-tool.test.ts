import { describe, expect, expectTypeOf, it } from "vitest";
import { defineTool, schema } from "../../../src/index.ts";
import { createRuntime } from "../../../src/runtime/runtime.ts";
import { scriptedModel } from "../../../src/agent/scripted-model.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";

describe("typed tools from the package alone", () => {
  it("types params from the schema builders and gets them validated and coerced", async () => {
    const seen: unknown[] = [];
    const forecast = defineTool({
      name: "forecast",
      label: "Forecast",
      description: "The weather for the next days in a city.",
      parameters: schema.obj({ city: schema.str({ minLength: 1 }), days: schema.opt(schema.int({ minimum: 1 })), units: schema.oneOf(["c", "f"]) }),
      execute: async (_callId, params) => {
        // Checked by `npm run typecheck`: params carry the schema's type, not `unknown`.
        expectTypeOf(params).toEqualTypeOf<{ city: string; units: "c" | "f"; days?: number }>();
        seen.push(params);
        return { content: [{ type: "text", text: `Sunny in ${params.city} for ${params.days ?? 1} day(s)` }], details: { city: params.city } };
      },
    });
    expectTypeOf<schema.Static<typeof forecast.parameters>>().toEqualTypeOf<{ city: string; units: "c" | "f"; days?: number }>();

    const scripted = scriptedModel([
      // "3" as a string: the schema says integer, so validation coerces it before execute.
      [{ toolCall: { id: "call-1", name: "forecast", arguments: { city: "Oslo", days: "3", units: "c" } } }],
      // A call that does not validate never reaches execute; the model sees the error.
      [{ toolCall: { id: "call-2", name: "forecast", arguments: { city: "", units: "kelvin" } } }],
      [{ text: "Sunny." }],
    ]);
    const store = createMemoryStore();
    const runtime = createRuntime({ store, agents: { assistant: { initialize: () => ({ ...scripted, tools: [forecast] }) } } });
    await runtime.start();
    try {
      const { submissionId, conversationId } = await runtime.dispatch({ agent: "assistant", instance: "w1", message: { kind: "user", body: "weather?" } });
      expect((await runtime.wait(submissionId)).status).toBe("succeeded");
      expect(seen).toEqual([{ city: "Oslo", days: 3, units: "c" }]);
      const outcomes = (await store.readRecords(conversationId, "")).filter((r) => r.kind === "tool_outcome");
      expect(outcomes.map((r) => r.payload.isError === true)).toEqual([false, true]);
    } finally {
      await runtime.close();
    }
  });
});
