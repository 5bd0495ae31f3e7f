/** The guarded wake of a waiting parent in the SQLite store (`ParentChildStore.deliverChildOutcome`). */
import type { ChildOutcomeDelivered, ChildOutcomeDelivery } from "../store/child-outcome.ts";
import type { Submission } from "../store/submission.ts";
import type { SqliteDatabase } from "./database.ts";

export function deliverChildOutcome(db: SqliteDatabase, delivery: ChildOutcomeDelivery): Promise<ChildOutcomeDelivered> {
  return db.write((): ChildOutcomeDelivered => {
    // Checked and written under one write lock: a second delivery of the call sees it gone.
    const sub = db.mustGetSubmission(delivery.parentSubmissionId);
    if (sub.status !== "waiting") return { delivered: false, reason: "not_waiting" } as const;
    const pending = sub.pendingCalls ?? [];
    if (!pending.includes(delivery.callId)) return { delivered: false, reason: "not_pending" } as const;
    const records = db.insertRecords(sub.conversationId, db.head(sub.conversationId), delivery.drafts);
    const next: Submission = { ...sub, pendingCalls: pending.filter((c) => c !== delivery.callId) };
    const requeued = next.pendingCalls!.length === 0;
    if (requeued) {
      next.status = "queued";
      next.updatedAt = db.clock.now();
      delete next.waitUntil;
      delete next.pendingCalls;
    }
    db.put(next);
    return { delivered: true, records, requeued };
  });
}
