import type { InboxMessage, SessionKey, Submission, SubmissionStatus } from "../store/submission.ts";

/** One submission and the bookkeeping that keeps its lookups off full scans. */
export interface Row {
  /** Internal, mutated in place by transitions; `sessionKey` and `input` are deep-frozen. */
  sub: Submission;
  /** Admission order. */
  seq: number;
  session: string;
  /** Undelivered steer / follow-up messages, acceptance order. */
  inbox: InboxMessage[];
}

export const STATUSES: readonly SubmissionStatus[] = ["queued", "running", "waiting", "terminalizing", "settled"];

/** A collision-free map key for a session (components may contain "/" or ":"). */
export function sessionId(key: SessionKey): string {
  return JSON.stringify([key.agent, key.instance, key.session]);
}

export function freezeKey(key: SessionKey): SessionKey {
  return Object.freeze({ agent: key.agent, instance: key.instance, session: key.session });
}

/** A fresh top-level copy; nested `sessionKey` and `input` are frozen and shared. */
export function copy(row: Row): Submission {
  return { ...row.sub };
}

export function clearLease(sub: Submission): void {
  delete sub.attemptId;
  delete sub.ownerId;
  delete sub.leaseExpiresAt;
}

/** What a submission that stops waiting (resumed, answered or cancelled) no longer carries. */
export function leaveWait(sub: Submission): void {
  delete sub.waitUntil;
  delete sub.waitCheckAt;
  delete sub.pendingCalls;
  delete sub.waitingFor;
  delete sub.delayedUntil;
}

export function inAdmissionOrder(rows: Iterable<Row>): Row[] {
  return [...rows].sort((a, b) => a.seq - b.seq);
}

export function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
