import type { ForkResult } from "../engine/conversation-fork.ts";
import type { DispatchMessage } from "../protocol/dispatch.ts";
import type { SessionAddress } from "./requests.ts";

/** A fork: the source session, the record to fork after, the target, and an optional first message. */
export interface ForkRequest extends SessionAddress {
  /** The last record of the source's log the fork keeps. */
  fromRecordId: string;
  /** The new session's instance (default: the source's). */
  targetInstance?: string;
  /** The new session (default `fork-<ulid>`). */
  targetSession?: string;
  /** Dispatched into the new session after the history (the edited message). */
  message?: DispatchMessage;
}

/** What a fork created. */
export interface ForkAnswer extends ForkResult {
  agent: string;
  instance: string;
  session: string;
  /** The submission of `message`, when one was given. */
  submissionId?: string;
}
