/**
 * Who may do what (ADR 0043): the caller of a request as a {@link Principal}, what it asks as an
 * {@link AccessAction} on an {@link AccessTarget}, and the {@link Authorize} policy that answers.
 * The wire's view of auth: the runtime checks every request against the policy, the transport only
 * learns who is calling.
 */

/** Who a request comes from, as an authenticator established it. */
export interface Principal {
  /** Stable id of the caller: a JWT's `sub`, `"operator"` for the deployment's own token. */
  readonly id: string;
  /** Roles the caller holds (e.g. `"operator"`, `"approver"`). */
  readonly roles?: readonly string[];
  /** What the authenticator verified about the caller (a JWT's claims). */
  readonly claims?: Readonly<Record<string, unknown>>;
}

/** The principal id and role of the deployment's operator (the bearer token's holder). */
export const OPERATOR = "operator";

/** The operator: reaches every agent instance under the default policy. */
export const OPERATOR_PRINCIPAL: Principal = Object.freeze({ id: OPERATOR, roles: Object.freeze([OPERATOR]) });

/**
 * What a request asks, named after the runtime method that does it. A fork is two checks: an
 * `exportConversation` of the source and an `importConversation` into the target (and a
 * `dispatch` there when it carries a message), so a policy that forbids either forbids the fork.
 */
export type AccessAction =
  | "dispatch"
  | "compact"
  | "steer"
  | "followUp"
  | "cancel"
  | "decide"
  | "pendingApprovals"
  | "conversation"
  | "listSubmissions"
  | "submission"
  | "deleteConversation"
  | "exportConversation"
  | "importConversation"
  | "uploadAttachment"
  | "attachment"
  /** The console's reads across the whole deployment (ADR 0054): every agent's and instance's submissions. */
  | "console";

/** Every {@link AccessAction}, in the order the docs list them. */
export const ACCESS_ACTIONS: readonly AccessAction[] = [
  "dispatch",
  "compact",
  "steer",
  "followUp",
  "cancel",
  "decide",
  "pendingApprovals",
  "conversation",
  "listSubmissions",
  "submission",
  "deleteConversation",
  "exportConversation",
  "importConversation",
  "uploadAttachment",
  "attachment",
  "console",
];

/** The actions that only read: a policy may allow these more widely than the rest. */
export const READ_ACTIONS: ReadonlySet<AccessAction> = new Set<AccessAction>([
  "pendingApprovals",
  "conversation",
  "listSubmissions",
  "submission",
  "exportConversation",
  "attachment",
  "console",
]);

/**
 * What an action touches. A session target names the agent instance (and the session when the
 * request names one: a submission addressed by id within an instance has none); an attachment
 * target its digest (absent for an upload, which names nothing yet) and whether the caller
 * uploaded it (ADR 0046: the runtime looks that up, without reading the bytes; false for a caller
 * no authentication named); the deployment target is all of it (the console's reads, which only
 * the operator makes under the default policy).
 */
export type AccessTarget =
  | { readonly kind: "session"; readonly agent: string; readonly instance: string; readonly session?: string }
  | { readonly kind: "attachment"; readonly digest?: string; readonly uploaded?: boolean }
  /** Everything the deployment holds (the console's listing across agents and instances, ADR 0054). */
  | { readonly kind: "deployment" };

/**
 * The policy: may `principal` do `action` on `target`? Anything but `true` refuses (a throw
 * included): fail closed. Called once per check, before the runtime reads or writes anything.
 */
export type Authorize = (principal: Principal, action: AccessAction, target: AccessTarget) => boolean | Promise<boolean>;
