/**
 * Call waits in the SQLite store (ADR 0025): registered by `insertRecords` with the records that
 * announce them; `answerCall` is the guarded decision, one write transaction.
 */
import type { SQLOutputValue } from "node:sqlite";
import type { CallAnswer, CallAnswered, CallAnswerWrite, CallWait } from "../store/call-wait.ts";
import type { Submission } from "../store/submission.ts";
import type { SqliteDatabase } from "./database.ts";

export class SqliteCallWaits {
  readonly #db: SqliteDatabase;

  constructor(db: SqliteDatabase) {
    this.#db = db;
  }

  async getCallWait(submissionId: string, callId: string): Promise<CallWait | undefined> {
    return callWaitFromRow(this.#db.sql.getCallWait.get(submissionId, callId));
  }

  async findCallback(callbackDigest: string): Promise<CallWait | undefined> {
    return callWaitFromRow(this.#db.sql.findCallback.get(callbackDigest));
  }

  answerCall(write: CallAnswerWrite): Promise<CallAnswered> {
    const db = this.#db;
    return db.write((): CallAnswered => {
      // Checked and written under one write lock: a second answer sees the first.
      const wait = callWaitFromRow(db.sql.getCallWait.get(write.submissionId, write.callId));
      const sub = db.findSubmission(write.submissionId);
      if (wait === undefined || sub === undefined) return { answered: false, reason: "not_found" };
      if (wait.answer !== undefined) return { answered: false, reason: "already_answered", answer: wait.answer };
      if (sub.status === "terminalizing" || sub.status === "settled") return { answered: false, reason: "settled" };
      db.sql.answerCallWait.run(write.submissionId, write.callId, JSON.stringify(write.answer));
      const pending = sub.pendingCalls ?? [];
      if (sub.status !== "waiting" || !pending.includes(write.callId)) return { answered: true, delivered: false };
      const records = db.insertRecords(sub.conversationId, db.head(sub.conversationId), write.drafts);
      const requeued = pending.length === 1;
      db.put(requeued ? requeue(sub, db.clock.now()) : { ...sub, pendingCalls: pending.filter((c) => c !== write.callId) });
      return { answered: true, delivered: true, records, requeued };
    });
  }
}

/** A waiting row whose last pending call was answered: queued, its wait cleared. */
export function requeue(sub: Submission, now: number): Submission {
  const next: Submission = { ...sub, status: "queued", updatedAt: now };
  delete next.waitUntil;
  delete next.pendingCalls;
  delete next.waitingFor;
  delete next.waitCheckAt;
  return next;
}

function callWaitFromRow(row: Record<string, SQLOutputValue> | undefined): CallWait | undefined {
  if (row === undefined) return undefined;
  const wait = JSON.parse(row.body as string) as CallWait;
  if (row.answer !== null && row.answer !== undefined) wait.answer = JSON.parse(row.answer as string) as CallAnswer;
  return wait;
}
