/**
 * The user's agents module. Bundles bind `#harness-agents` with an esbuild alias (the `Harness`
 * construct's `agentsEntry`); the local cloud binds it with a module resolution hook. This
 * declaration only lets the type checker see what the handlers import.
 */
declare module "#harness-agents" {
  export const agents: Record<string, import("../engine/agent-definition.ts").AgentDefinition>;
}
