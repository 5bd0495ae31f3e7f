import type { AgentTool } from "@earendil-works/pi-agent-core";

/**
 * Returns `tool` as it is, typed: `params` in `execute` gets the type of the `parameters` schema
 * (built with `schema` from `resolute-harness`, or a TypeBox schema), without writing
 * `AgentTool<typeof parameters>` by hand.
 *
 *   const weather = defineTool({
 *     name: "weather", label: "Weather", description: "Today's weather in a city.",
 *     parameters: schema.obj({ city: schema.str() }),
 *     execute: async (_callId, { city }) => ({ content: [{ type: "text", text: `Sunny in ${city}` }], details: { city } }),
 *   });
 */
export function defineTool<TParameters extends object, TDetails = unknown>(
  tool: AgentTool<TParameters, TDetails>,
): AgentTool<TParameters, TDetails> {
  return tool;
}
