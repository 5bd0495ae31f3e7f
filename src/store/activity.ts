/**
 * The console's listing across agents and instances (ADR 0054): submissions by their latest
 * activity (`updatedAt`), newest first, filtered by agent, by what they are doing (their
 * {@link ActivityState}) and by time.
 */
import type { ActivityState } from "../protocol/submission-view.ts";
import type { Submission } from "./submission.ts";

/** What a submission is doing (the wire's type, `protocol/submission-view.ts`). */
export type { ActivityState } from "../protocol/submission-view.ts";

export const ACTIVITY_STATES: readonly ActivityState[] = [
  "queued",
  "running",
  "waiting_person",
  "waiting_callback",
  "waiting_child",
  "waiting_time",
  "succeeded",
  "failed",
  "cancelled",
];

/** The {@link ActivityState} of a row. A waiting row's first pending entry names what it waits for. */
export function activityStateOf(sub: Pick<Submission, "status" | "waitingFor" | "pendingCalls" | "outcome">): ActivityState {
  switch (sub.status) {
    case "queued":
      return "queued";
    case "running":
    case "terminalizing":
      return "running";
    case "waiting": {
      const pending = new Set(sub.pendingCalls ?? []);
      const entries = (sub.waitingFor ?? []).filter((e) => e.kind === "time" || pending.has(e.callId));
      const kind = entries.find((e) => e.kind === "approval")?.kind ?? entries[0]?.kind;
      if (kind === "approval") return "waiting_person";
      if (kind === "callback") return "waiting_callback";
      if (kind === "time") return "waiting_time";
      return "waiting_child";
    }
    case "settled": {
      const outcome = sub.outcome;
      if (outcome?.status === "succeeded") return "succeeded";
      return outcome?.errorCode === "cancelled" || outcome?.errorCode === "cancelled_by_parent" ? "cancelled" : "failed";
    }
  }
}

/** One page of {@link ActivityQuery}. */
export interface ActivityQuery {
  /** At most this many submissions (a positive integer, at most {@link ACTIVITY_PAGE_MAX}). */
  limit: number;
  /** The `next` of the previous page: only submissions whose activity is older than it. */
  before?: string;
  /** Only this agent's. */
  agent?: string;
  /** Only submissions in one of these states (absent or empty: any). */
  states?: readonly ActivityState[];
  /** Only those whose latest activity (`updatedAt`, epoch ms) is at or after this. */
  since?: number;
  /** Only those whose latest activity is before this. */
  until?: number;
}

/** The largest page {@link ActivityQuery} asks for. */
export const ACTIVITY_PAGE_MAX = 100;

/** What `listActivity` answers. */
export interface ActivityPage {
  /** Newest activity first (`updatedAt` descending, then id descending). */
  submissions: Submission[];
  /**
   * Pass as `before` for the next (older) page; absent when nothing older matches. A filtered
   * page may hold fewer than `limit` submissions (even none) and still have a `next`: a store
   * bounds what one page reads (DynamoDB) instead of reading on until the page is full.
   */
  next?: string;
}

/**
 * The cursor of a position in activity order: the `updatedAt` (zero-padded to 15 digits) and the
 * id, so cursors compare as strings in the order they list.
 */
export function activityCursor(updatedAt: number, id: string): string {
  return `${String(updatedAt).padStart(15, "0")}#${id}`;
}

/** The parts of an {@link activityCursor}, or undefined when `cursor` is not one. */
export function parseActivityCursor(cursor: string): { updatedAt: number; id: string } | undefined {
  const match = /^(\d{15})#(.+)$/s.exec(cursor);
  if (!match) return undefined;
  return { updatedAt: Number(match[1]), id: match[2]! };
}

/** True when `sub` passes the query's filters other than its cursor (every store's one rule). */
export function matchesActivity(sub: Submission, query: ActivityQuery): boolean {
  if (query.agent !== undefined && sub.sessionKey.agent !== query.agent) return false;
  if (query.since !== undefined && sub.updatedAt < query.since) return false;
  if (query.until !== undefined && sub.updatedAt >= query.until) return false;
  if (query.states !== undefined && query.states.length > 0 && !query.states.includes(activityStateOf(sub))) return false;
  return true;
}
