/**
 * Node module-resolution hooks that bind `#harness-agents` to the agents module of a local
 * function, as the `Harness` construct's esbuild alias does in a deployed bundle. Registered by
 * `function-child.ts` with `module.register(..., { data: { target } })`.
 */
import type { InitializeHook, ResolveHook } from "node:module";

/** The specifier handlers import the user's agents by. */
export const AGENTS_SPECIFIER = "#harness-agents";

let target = "";

export const initialize: InitializeHook<{ target: string }> = (data) => {
  target = data.target;
};

export const resolve: ResolveHook = (specifier, context, next) => {
  if (specifier === AGENTS_SPECIFIER) return { url: target, shortCircuit: true };
  return next(specifier, context);
};
