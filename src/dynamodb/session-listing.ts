/**
 * The operator's listing of one session's submissions (`listSessionSubmissions`): a Query of the
 * session's member items (`Q#<seq>`, one per admission) newest first, then the submissions they
 * name, read whole and strongly consistent. Only the session's own partition and the listed
 * submissions are read: nothing scans the table or another session.
 */
import { QueryCommand } from "@aws-sdk/client-dynamodb";
import { SubmissionNotFound } from "../errors.ts";
import type { SessionKey, SessionSubmissionQuery, Submission } from "../store/submission.ts";
import type { StoreContext } from "./context.ts";
import { bool, type Item, reqNum, reqStr, S } from "./item.ts";
import { memberSk, sessionPk } from "./keys.ts";
import { loadState, loadSubmissions, toSubmission } from "./loader.ts";
import { sessionKeyOf } from "./session-head.ts";
import { namesSubmission } from "./session-order.ts";

/** Member items read per Query while a status filter is skipping rows. */
const FILTERED_CHUNK = 25;

export async function listSessionSubmissions(
  ctx: StoreContext,
  key: SessionKey,
  query: SessionSubmissionQuery,
): Promise<Submission[]> {
  const pk = sessionPk(key);
  // Members sort by sequence under `Q#`; the session item (`SESSION`) sorts after them.
  let upper = memberSk(Number.MAX_SAFE_INTEGER);
  if (query.before !== undefined) {
    const state = await loadState(ctx, query.before);
    if (!state || sessionPk(sessionKeyOf(state)) !== pk) throw new SubmissionNotFound(query.before);
    const seq = reqNum(state, "seq");
    if (seq <= 1) return [];
    upper = memberSk(seq - 1);
  }
  const page: Submission[] = [];
  let start: Item | undefined;
  do {
    const want = query.limit - page.length;
    const res = await ctx.dynamo.send(
      new QueryCommand({
        TableName: ctx.table,
        KeyConditionExpression: "pk = :pk AND sk BETWEEN :lo AND :hi",
        ExpressionAttributeValues: { ":pk": S(pk), ":lo": S(memberSk(0)), ":hi": S(upper) },
        ScanIndexForward: false,
        ConsistentRead: true,
        Limit: query.status === undefined ? want : Math.max(want, FILTERED_CHUNK),
        ExclusiveStartKey: start,
      }),
    );
    // A delayed message that joined the order is listed at its new member, not its old one.
    // A number skipped (its admitter never wrote it, ADR 0035) names nothing.
    const ids = (res.Items ?? []).filter((member) => namesSubmission(member) && !bool(member, "moved")).map((member) => reqStr(member, "submissionId"));
    const loaded = ids.length === 0 ? new Map() : await loadSubmissions(ctx, ids);
    for (const id of ids) {
      const sub = loaded.get(id);
      if (!sub || (query.status !== undefined && reqStr(sub.state, "status") !== query.status)) continue;
      page.push(await toSubmission(ctx, sub));
      if (page.length === query.limit) return page;
    }
    start = res.LastEvaluatedKey;
  } while (start);
  return page;
}
