/**
 * `resolute-harness/auth`: who may do what (ADR 0043). An {@link Authenticator} turns a request
 * into the {@link Principal} calling it (`bearerTokenAuthenticator` for the deployment's own token,
 * `jwtAuthenticator` for OIDC / Cognito users, `anyOf` for both); the runtime's {@link Authorize}
 * policy (default {@link ownerPolicy}) then decides each {@link AccessAction} on each
 * {@link AccessTarget} before anything is read or written.
 *
 * @example Users signed in by an OIDC issuer reach their own instance; the operator token reaches all:
 * ```ts
 * import { createRuntime, localModel } from "resolute-harness";
 * import { anyOf, bearerTokenAuthenticator, jwtAuthenticator, ownerPolicy } from "resolute-harness/auth";
 * import { createMemoryStore } from "resolute-harness/memory";
 * import { serve } from "resolute-harness/server";
 *
 * const runtime = createRuntime({
 *   store: createMemoryStore(),
 *   agents: { assistant: { initialize: () => localModel() } },
 *   authorize: ownerPolicy(), // the default: instance id = the user's `sub`
 * });
 * await runtime.start();
 * await serve(runtime, {
 *   auth: {
 *     authenticate: anyOf(
 *       bearerTokenAuthenticator({ token: process.env.HARNESS_BEARER_TOKEN ?? "change-me" }),
 *       jwtAuthenticator({ issuer: "https://issuer.example.com", audience: "my-app" }),
 *     ),
 *   },
 * });
 * ```
 *
 * @module
 */
export {
  ACCESS_ACTIONS,
  OPERATOR,
  OPERATOR_PRINCIPAL,
  READ_ACTIONS,
  type AccessAction,
  type AccessTarget,
  type Authorize,
  type Principal,
} from "../protocol/principal.ts";
export { ownerPolicy, type OwnerPolicyOptions } from "./owner-policy.ts";
export { anyOf, bearerTokenAuthenticator, type Authenticator, type BearerTokenAuthenticatorOptions } from "./authenticate.ts";
export { jwtAuthenticator, type JwtAuthenticatorOptions } from "./jwt-authenticator.ts";
// The runtime as one caller reaches it (`Runtime.as`): its request methods, each authorized.
export type { CallerRuntime } from "../runtime/caller-runtime.ts";
export type { AgentCatalogEntry, RuntimeRequests } from "../runtime/runtime-requests.ts";
// What `decide` takes (the root exports the other request types; it holds 60 names at most).
export type { DecisionRequest } from "../runtime/requests.ts";
// What the console's retry answers (ADR 0054).
export type { RetryResult } from "../runtime/activity-view.ts";
export type { DirectToolCall, DirectToolResult } from "../runtime/direct-tool-call.ts";
