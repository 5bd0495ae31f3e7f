import type { Static } from "@earendil-works/pi-schema";

/**
 * The agents an untyped client talks to: any name, any result. A typed client takes the type of
 * an agents module's `agents` instead (`createClient<typeof agents>()`).
 */
export type AnyAgents = Record<string, unknown>;

/** An agent's name: a key of the agents map (any string for an untyped client). */
export type AgentName<A> = Extract<keyof A, string>;

/**
 * The `result` a settled submission of agent `N` carries: the type of the agent's
 * `resultSchema` when it declares one built with `schema` (else `unknown`).
 */
export type AgentResult<A, N> = N extends keyof A ? (A[N] extends { readonly resultSchema: infer S } ? Static<S> : unknown) : unknown;

/**
 * The `result` of a dispatch: the type of its own `resultSchema` (`S`) when it gives one, else
 * its agent's ({@link AgentResult}).
 */
export type DispatchResult<A, N, S> = [S] extends [undefined] ? AgentResult<A, N> : Static<S>;
