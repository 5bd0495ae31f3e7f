/**
 * The console's listing across agents and instances (`listActivity`, ADR 0054) through the
 * sparse KEYS_ONLY `byActivity` index: one Query per shard, newest activity first, each asking
 * for one page of keys; the shards' keys merged, the page's submissions peeked at (eventually
 * consistent state items), filtered, and only the matching ones read whole. A page reads at most
 * `STATUS_SHARDS` Queries of `limit + 1` keys, `limit` state peeks and the matching submissions:
 * a filter that matches little gives a short page with a `next`, never a longer read.
 */
import { QueryCommand } from "@aws-sdk/client-dynamodb";
import {
  type ActivityPage,
  type ActivityQuery,
  activityCursor,
  activityStateOf,
  matchesActivity,
  parseActivityCursor,
} from "../store/activity.ts";
import type { Submission, SubmissionStatus, WaitEntry } from "../store/submission.ts";
import type { StoreContext } from "./context.ts";
import { type Item, S, str } from "./item.ts";
import { submissionIdOf } from "./keys.ts";
import { loadSubmissions, peekStates, toSubmission } from "./loader.ts";
import { activityShardKey, HARNESS_TABLE, STATUS_SHARDS } from "./table.ts";

/** Below every activity key (they start with a zero-padded time). */
const LOWEST = "0";

export async function listActivity(ctx: StoreContext, query: ActivityQuery): Promise<ActivityPage> {
  if (query.before !== undefined && parseActivityCursor(query.before) === undefined) return { submissions: [] };
  // The index's sort key is the cursor: `BETWEEN` is inclusive, so the upper bound itself is dropped below.
  const untilKey = query.until === undefined ? undefined : activityCursor(query.until, "");
  const upper = [query.before, untilKey, activityCursor(Number.MAX_SAFE_INTEGER, "")].filter((k) => k !== undefined).sort()[0]!;
  const lower = query.since === undefined ? LOWEST : activityCursor(query.since, "");
  if (lower > upper) return { submissions: [] };

  const index = HARNESS_TABLE.indexes.byActivity;
  const shards = await Promise.all(
    Array.from({ length: STATUS_SHARDS }, async (_, shard) => {
      const res = await ctx.dynamo.send(
        new QueryCommand({
          TableName: ctx.table,
          IndexName: index.indexName,
          KeyConditionExpression: "#pk = :pk AND #sk BETWEEN :lo AND :hi",
          ExpressionAttributeNames: { "#pk": index.partitionKey, "#sk": index.sortKey },
          ExpressionAttributeValues: { ":pk": S(activityShardKey(shard)), ":lo": S(lower), ":hi": S(upper) },
          ScanIndexForward: false,
          // One more: the first key may be the upper bound itself (the cursor), which is dropped.
          Limit: query.limit + 1,
        }),
      );
      const keys = (res.Items ?? []).map((item) => ({ sk: str(item, index.sortKey)!, id: submissionIdOf(str(item, "pk")!) }));
      // A shard that stopped at its limit may hold more below its last key.
      return { keys, floor: res.LastEvaluatedKey === undefined ? undefined : keys.at(-1)?.sk };
    }),
  );
  // Below the highest key where a shard stopped, what another shard holds is unknown yet: the
  // page ends there (the next page reads on from it).
  const floors = shards.map((s) => s.floor).filter((f) => f !== undefined);
  const floor = floors.length === 0 ? undefined : floors.sort().at(-1)!;
  const known = shards
    .flatMap((s) => s.keys)
    .filter((k) => k.sk !== upper && (floor === undefined || k.sk >= floor))
    .sort((a, b) => (a.sk < b.sk ? 1 : a.sk > b.sk ? -1 : 0));
  const taken = known.slice(0, query.limit);
  const next = known.length > taken.length ? taken.at(-1)!.sk : floor;

  const submissions = await readMatching(ctx, taken, query);
  return { submissions, ...(next === undefined ? {} : { next }) };
}

/**
 * The submissions of `keys` that match, in the keys' order. The peeked state decides what to
 * read whole (a state whose outcome is in S3 is read to tell); the whole row decides again. An
 * entry the index has not caught up with (the row's activity moved on) is left out: the row is
 * listed at its newer place.
 */
async function readMatching(ctx: StoreContext, keys: readonly { sk: string; id: string }[], query: ActivityQuery): Promise<Submission[]> {
  if (keys.length === 0) return [];
  const peeked = new Map((await peekStates(ctx, keys.map((k) => k.id))).map((state) => [str(state, "id")!, state]));
  const candidates = keys.filter((k) => {
    const state = peeked.get(k.id);
    return state !== undefined && mayMatch(state, query);
  });
  if (candidates.length === 0) return [];
  const loaded = await loadSubmissions(ctx, candidates.map((k) => k.id));
  const page: Submission[] = [];
  for (const k of candidates) {
    const row = loaded.get(k.id);
    if (row === undefined) continue;
    const sub = await toSubmission(ctx, row);
    if (activityCursor(sub.updatedAt, sub.id) === k.sk && matchesActivity(sub, query)) page.push(sub);
  }
  return page;
}

/** Whether a peeked state item may pass the query's filters (its outcome in S3: maybe). */
function mayMatch(state: Item, query: ActivityQuery): boolean {
  if (query.agent !== undefined && str(state, "agent") !== query.agent) return false;
  if (query.states === undefined || query.states.length === 0) return true;
  const status = str(state, "status") as SubmissionStatus;
  if (status === "settled" && str(state, "outcome") === undefined) return true;
  const outcome = str(state, "outcome");
  const waitingFor = str(state, "waitingFor");
  const state_ = activityStateOf({
    status,
    waitingFor: waitingFor === undefined ? undefined : (JSON.parse(waitingFor) as WaitEntry[]),
    pendingCalls: state.pendingCalls?.SS,
    outcome: outcome === undefined ? undefined : JSON.parse(outcome),
  });
  return query.states.includes(state_);
}
