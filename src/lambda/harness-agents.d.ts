/**
 * The user's agents module (`HarnessAgentsModule`). Bundles bind `#harness-agents` with an esbuild
 * alias (the `Harness` construct's `agentsEntry`); the local cloud binds it with a module
 * resolution hook. This declaration only lets the type checker see what the handlers import.
 */
declare module "#harness-agents" {
  type Module = import("./agents-module.ts").HarnessAgentsModule;
  export const agents: Module["agents"];
  export const observers: Module["observers"];
  export const interceptors: Module["interceptors"];
  export const subagents: Module["subagents"];
  export const subagentLimits: Module["subagentLimits"];
}
