/**
 * The conversation of a session key, kept on the session item (`convId`, `convCreatedAt`):
 * created once, by a conditional update, with the session's first admission.
 */
import { UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { ConversationNotFound } from "../errors.ts";
import { type Conversation, type SessionKey, sessionKeyString } from "../store/submission.ts";
import type { StoreContext } from "./context.ts";
import { conditionRefusal } from "./errors.ts";
import { Expr } from "./expression.ts";
import { type Item, N, reqNum, reqStr, S, str } from "./item.ts";
import { stampIdle } from "./idle-sessions.ts";
import { sessionPk } from "./keys.ts";
import { getSessionItem, sessionItemKey } from "./session-order.ts";

export class Conversations {
  readonly #ctx: StoreContext;

  constructor(ctx: StoreContext) {
    this.#ctx = ctx;
  }

  async ensureConversation(candidate: Conversation): Promise<{ conversation: Conversation; created: boolean }> {
    const ctx = this.#ctx;
    const existing = conversationOf(await getSessionItem(ctx, candidate.key));
    if (existing) return { conversation: existing, created: false };
    const e = new Expr()
      .set("convId", S(candidate.id))
      .set("convCreatedAt", N(candidate.createdAt))
      .set("agent", S(candidate.key.agent))
      .set("instance", S(candidate.key.instance))
      .set("session", S(candidate.key.session));
    // A conversation with nothing unsettled is idle from its creation (an import's, a fork's);
    // its first admission's reservation clears it.
    if (ctx.idleSessions) stampIdle(e, candidate.createdAt, sessionPk(candidate.key));
    try {
      await ctx.dynamo.send(
        new UpdateItemCommand({
          TableName: ctx.table,
          Key: sessionItemKey(candidate.key),
          UpdateExpression: e.update,
          ConditionExpression: `attribute_not_exists(${e.n("convId")})`,
          ...e.attributes,
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
    } catch (error) {
      const refusal = conditionRefusal(error);
      const raced = conversationOf(refusal?.item);
      if (!raced) throw error;
      // Another admission created it first (or this call's own earlier try: same candidate).
      return { conversation: raced, created: raced.id === candidate.id && raced.createdAt === candidate.createdAt };
    }
    return {
      conversation: { id: candidate.id, key: { ...candidate.key }, createdAt: candidate.createdAt },
      created: true,
    };
  }

  async getConversation(key: SessionKey): Promise<Conversation> {
    const conversation = conversationOf(await getSessionItem(this.#ctx, key));
    if (!conversation) throw new ConversationNotFound(sessionKeyString(key));
    return conversation;
  }
}

/** The conversation a session item holds, or undefined. */
function conversationOf(item: Item | undefined): Conversation | undefined {
  const id = str(item, "convId");
  if (!item || id === undefined) return undefined;
  return {
    id,
    key: { agent: reqStr(item, "agent"), instance: reqStr(item, "instance"), session: reqStr(item, "session") },
    createdAt: reqNum(item, "convCreatedAt"),
  };
}
