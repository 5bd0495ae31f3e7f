/**
 * The write check (`AppOptions.checkWrite`): one question the app asks before every request that
 * writes into an instance, whatever route names it and wherever the instance is named (the path,
 * or a fork's body). A middleware sees only the path; a fork of `/agents/a/acme` into
 * `{"instance": "globex"}` writes into globex, and must pass what a direct write there passes
 * (issue 33). The general authorization to come (`authorize(principal, action, resource)`) takes
 * this place: a fork is a read of its source and a write of its target.
 */
import type { Context } from "hono";
import { RequestError } from "./http-errors.ts";

/** A session as a request names it (`session` absent: the default session, or for a fork a new one). */
export interface WriteAddress {
  agent: string;
  instance: string;
  session?: string;
}

/** What a request is about to write, and where. */
export interface InstanceWrite {
  /** The route's write: a message admitted (`dispatch`, `compact`), injected (`steer`, `followUp`), a decision, a cancel, a deletion, or a conversation created from another (`fork`, `import`). */
  action: "dispatch" | "compact" | "steer" | "followUp" | "decide" | "cancel" | "delete" | "fork" | "import";
  /** Where it writes: for a fork, the new session (its instance from the body, else the source's). */
  target: WriteAddress;
  /** For a fork, the session it copies from (the path's). */
  source?: WriteAddress;
}

/** A refusal: 403 `forbidden` or 404 `not_found` (to a caller that must not learn the instance exists), with its message. */
export interface WriteRefusal {
  status: 403 | 404;
  error: string;
}

/**
 * Answers a write: `undefined` lets it through, a {@link WriteRefusal} refuses it before the runtime
 * sees it (nothing stored). Gets the request's context too (a principal a middleware set).
 */
export type WriteCheck = (write: InstanceWrite, c: Context) => WriteRefusal | undefined | Promise<WriteRefusal | undefined>;

/** Asks `check` (when there is one) and throws its refusal as a `RequestError`. */
export async function checkWrite(check: WriteCheck | undefined, c: Context, write: InstanceWrite): Promise<void> {
  if (check === undefined) return;
  const refusal = await check(write, c);
  if (refusal === undefined) return;
  throw new RequestError(refusal.status, refusal.status === 404 ? "not_found" : "forbidden", refusal.error);
}
