/**
 * What a client sends: the address of a session and the message it dispatches. Part of the wire
 * contract (client, HTTP and runtime share it); the store keeps the message whole as a
 * submission's input.
 */
import type { AttachmentRef } from "./records.ts";

/** Addresses one session: a named conversation inside one agent instance. */
export interface SessionKey {
  agent: string;
  instance: string;
  /** "default" when the caller names none. */
  session: string;
}

/** `"agent/instance/session"`: the one string form of a session key (FIFO group, maps). */
export function sessionKeyString(key: SessionKey): string {
  return `${key.agent}/${key.instance}/${key.session}`;
}

/**
 * What a submission runs: a `user` message or a `signal` (both dispatched by clients), or a
 * manual `compact` (admitted by `runtime.compact`, with an empty body: it only compacts).
 */
export type InboundKind = "user" | "signal" | "compact";

export interface SignalMeta {
  type: string;
  sender?: Record<string, string>;
  tag?: string;
}

/** What a client dispatches: stored whole on the submission as its input; idempotency compares it. */
export interface DispatchMessage {
  kind: InboundKind;
  body: string;
  attachments?: AttachmentRef[];
  signal?: SignalMeta;
  /** JSON Schema for a structured result. */
  resultSchema?: unknown;
  /** Corrective turns allowed when the result does not validate (0 → 2). */
  resultRetries?: number;
  /**
   * A delayed message (ADR 0025): RFC 3339 time before which it does not join its session's
   * order (at most a year ahead; one in the past runs now). Its budget starts then.
   */
  notBefore?: string;
  /**
   * Who sent it: the authenticated caller's principal id (ADR 0043), set by the runtime from the
   * caller (`Runtime.as`), never taken from a request body. A subagent's message carries its
   * parent's. Absent where no authentication is configured.
   */
  principalId?: string;
}
