/** The guarded wake of a waiting parent in the SQLite store (`ParentChildStore.deliverChildOutcome`). */
import type { ChildOutcomeDelivered, ChildOutcomeDelivery } from "../store/child-outcome.ts";
import type { Submission } from "../store/submission.ts";
import { requeue } from "./call-waits.ts";
import type { SqliteDatabase } from "./database.ts";

export function deliverChildOutcome(db: SqliteDatabase, delivery: ChildOutcomeDelivery): Promise<ChildOutcomeDelivered> {
  return db.write((): ChildOutcomeDelivered => {
    // Checked and written under one write lock: a second delivery of the call sees it gone.
    const sub = db.mustGetSubmission(delivery.parentSubmissionId);
    if (sub.status !== "waiting") return { delivered: false, reason: "not_waiting" } as const;
    const pending = sub.pendingCalls ?? [];
    if (!pending.includes(delivery.callId)) return { delivered: false, reason: "not_pending" } as const;
    const records = db.insertRecords(sub.conversationId, db.head(sub.conversationId), delivery.drafts);
    const requeued = pending.length === 1;
    const next: Submission = requeued ? requeue(sub, db.clock.now()) : { ...sub, pendingCalls: pending.filter((c) => c !== delivery.callId) };
    db.put(next);
    return { delivered: true, records, requeued };
  });
}
