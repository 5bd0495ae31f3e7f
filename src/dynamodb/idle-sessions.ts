/**
 * Idle sessions on DynamoDB, for conversation retention (`conversationRetentionMs`, ADR 0034).
 * A session item carries the `byStatus` index keys of the `idle` bucket while nothing of it is
 * unsettled: stamped by the write that makes it idle anyway (the head pointer's move past its
 * last admission, the creation of its conversation, the cancel of a delayed message in a session
 * without a head) and removed by the write that puts something unsettled in its order (the
 * admission that becomes its head, a head's promotion, a delayed message's admission). A bare
 * reservation leaves it: an admitter that dies right after reserving leaves the session idle. The sort key starts with the time it went idle, so the idle
 * sessions older than a retention are one range Query, and a session in use costs nothing.
 * A subagent's session is not stamped: it goes with its parent's.
 */
import { GetItemCommand, QueryCommand } from "@aws-sdk/client-dynamodb";
import type { IdleConversationQuery } from "../store/store.ts";
import type { Conversation, SessionKey } from "../store/submission.ts";
import type { StoreContext } from "./context.ts";
import type { Expr } from "./expression.ts";
import { type Item, num, reqNum, reqStr, S, str } from "./item.ts";
import { pad, SESSION_SK } from "./keys.ts";
import { HARNESS_TABLE } from "./table.ts";
import { STRANDED_GRACE_MS } from "./session-order.ts";

/** The one `byStatus` partition of idle sessions (an idle transition per conversation turn). */
export const IDLE_BUCKET = "idle#0";

/** Stamps the session item updated by `e` idle since `at`. */
export function stampIdle(e: Expr, at: number, sessionPk: string): Expr {
  return e.set("byStatusPk", S(IDLE_BUCKET)).set("byStatusSk", S(`${pad(at)}#${sessionPk}`));
}

/** Removes the idle stamp (the session is in use again). */
export function clearIdle(e: Expr): Expr {
  return e.remove("byStatusPk", "byStatusSk");
}

/** The session key a session item's `pk` encodes (`SES#<agent>/<instance>/<session>`, parts URI-encoded). */
export function sessionKeyOfPk(pk: string): SessionKey {
  const [agent, instance, session] = pk.slice("SES#".length).split("/").map(decodeURIComponent);
  return { agent: agent!, instance: instance!, session: session! };
}

/** The session's pointer waits at a number reserved less than {@link STRANDED_GRACE_MS} before `now`. */
function waitsAtFreshReservation(session: Item, now: number): boolean {
  if (str(session, "headId") !== undefined || (num(session, "headSeq") ?? 1) > (num(session, "admitSeq") ?? 0)) return false;
  return now - (num(session, "reservedAt") ?? 0) < STRANDED_GRACE_MS;
}

/**
 * Pages through the sessions idle since before `query.idleSince`, oldest first. `after` is the
 * last conversation of the previous page: the listing remembers where that page ended (one sweep
 * pages with one store); a cursor it does not know starts over, which finds only what the
 * previous pages left (the sweep deletes what it lists).
 */
export class IdleSessions {
  readonly #ctx: StoreContext;
  /** Where each returned page ended, by the id of its last conversation (the latest few). */
  readonly #ends = new Map<string, Item>();

  constructor(ctx: StoreContext) {
    this.#ctx = ctx;
  }

  async list(query: IdleConversationQuery): Promise<Conversation[]> {
    const index = HARNESS_TABLE.indexes.byStatus;
    const out: Conversation[] = [];
    let start = query.after === undefined ? undefined : this.#ends.get(query.after);
    let last: Item | undefined;
    do {
      const res = await this.#ctx.dynamo.send(
        new QueryCommand({
          TableName: this.#ctx.table,
          IndexName: index.indexName,
          KeyConditionExpression: "#p = :bucket AND #s < :before",
          ExpressionAttributeNames: { "#p": index.partitionKey, "#s": index.sortKey },
          ExpressionAttributeValues: { ":bucket": S(IDLE_BUCKET), ":before": S(pad(query.idleSince)) },
          Limit: query.limit - out.length,
          ExclusiveStartKey: start,
        }),
      );
      for (const entry of res.Items ?? []) {
        last = entry;
        // The index is eventually consistent: the session item says whether it is still idle.
        const read = new GetItemCommand({ TableName: this.#ctx.table, Key: { pk: entry.pk!, sk: S(SESSION_SK) }, ConsistentRead: true });
        const session = (await this.#ctx.dynamo.send(read)).Item;
        const convId = str(session, "convId");
        // A deletion left midway is listed too: the sweep's deletion completes it.
        if (!session || convId === undefined || str(session, "byStatusPk") !== IDLE_BUCKET) continue;
        // Its pointer waits at a number reserved a moment ago: an admission on its way, which
        // clears the stamp when it writes. One reserved longer ago is an admitter gone, whose
        // number a deletion skips (ADR 0035): the session is idle.
        if (waitsAtFreshReservation(session, this.#ctx.clock.now())) continue;
        out.push({ id: convId, key: sessionKeyOfPk(reqStr(session, "pk")), createdAt: reqNum(session, "convCreatedAt") });
      }
      start = res.LastEvaluatedKey;
    } while (start && out.length < query.limit);
    if (out.length > 0 && last) {
      if (this.#ends.size >= 16) this.#ends.delete(this.#ends.keys().next().value!);
      this.#ends.set(out.at(-1)!.id, { pk: last.pk!, sk: last.sk!, byStatusPk: last.byStatusPk!, byStatusSk: last.byStatusSk! });
    }
    return out;
  }
}
