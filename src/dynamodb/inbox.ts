/**
 * The per-session inbox of steer and follow-up messages. Messages belong to the session's head
 * submission while its run is in flight; they are items `IB#<seq>` in the submission's
 * partition, and the head's state item counts them (`inboxSeq` accepted, `inboxPending` not yet
 * delivered). Counting on the state item lets acceptance check "in flight" and settlement check
 * "drained" in the very writes that change the status, with no extra item in either.
 */
import type { ConversationRecord, RecordDraft } from "../protocol/records.ts";
import { ClaimLost, NoRunInFlight, SubmissionNotFound } from "../errors.ts";
import type { InboxKind, InboxMessage, SessionKey } from "../store/submission.ts";
import type { InboxDrain } from "../store/store.ts";
import { sessionKeyString } from "../store/submission.ts";
import { noteBlobRefs } from "./blob-refs.ts";
import type { StoreContext } from "./context.ts";
import { queryAll } from "./query.ts";
import { type ConversationLog, ExtrasRaced } from "./conversation-log.ts";
import { failedCondition, isTransientCancellation } from "./errors.ts";
import { Expr } from "./expression.ts";
import { type Item, N, num, reqNum, reqStr, S, str } from "./item.ts";
import { INBOX_PREFIX, inboxSk, submissionPk } from "./keys.ts";
import { loadState } from "./loader.ts";
import { claimEpoch } from "./log-epoch.ts";
import { RetryStep, rerunOnRace } from "./retry.ts";
import { getSessionItem } from "./session-order.ts";
import { stateKey } from "./submission-item.ts";
import { putNewItem, transact, updateItem } from "./transact.ts";

export class Inbox {
  readonly #ctx: StoreContext;
  readonly #log: ConversationLog;

  constructor(ctx: StoreContext, log: ConversationLog) {
    this.#ctx = ctx;
    this.#log = log;
  }

  /**
   * Accepts `message` for the in-flight run of `key`: one transaction puts the message and bumps
   * the head's counters, conditioned on the head still being in flight and on the sequence it
   * read. A head that is not in flight → `NoRunInFlight`, nothing stored.
   */
  async enqueueInbox(key: SessionKey, message: InboxMessage): Promise<{ submissionId: string }> {
    const ctx = this.#ctx;
    const body = await this.#bodyAttribute(message.body);
    return rerunOnRace("enqueueInbox", async () => {
      const headId = str(await getSessionItem(ctx, key), "headId");
      const state = headId === undefined ? undefined : await loadState(ctx, headId);
      if (!headId || !state || !inFlight(state)) throw new NoRunInFlight(sessionKeyString(key));
      // A spilled body is the head submission's (ADR 0034), noted before its message exists.
      await noteBlobRefs(ctx, submissionPk(headId), [str(body, "bodyRef")]);
      const accepted = num(state, "inboxSeq") ?? 0;
      const seq = accepted + 1;

      const e = new Expr().set("inboxSeq", N(seq));
      const zero = e.v(N(0));
      const pendingCount = e.n("inboxPending");
      e.setRaw(`${pendingCount} = if_not_exists(${pendingCount}, ${zero}) + ${e.v(N(1))}`);
      const status = e.n("status");
      const condition = [
        accepted === 0 ? `attribute_not_exists(${e.n("inboxSeq")})` : `${e.n("inboxSeq")} = ${e.v(N(accepted))}`,
        `(${status} IN (${e.v(S("running"))}, ${e.v(S("waiting"))}) OR (${status} = ${e.v(S("queued"))} AND (${e.n("attemptCount")} > ${zero} OR ${e.n("charge")} = ${zero})))`,
      ].join(" AND ");
      const update = updateItem(ctx, stateKey(headId), e, condition);

      const reasons = await transact(ctx, [
        update,
        putNewItem(ctx, {
          pk: S(submissionPk(headId)),
          sk: S(inboxSk(seq)),
          seq: N(seq),
          kind: S(message.kind),
          ...body,
          ...(message.principalId === undefined ? {} : { principalId: S(message.principalId) }),
          acceptedAt: N(ctx.clock.now()),
        }),
      ]);
      if (!reasons) return { submissionId: headId };
      if (failedCondition(reasons, 0) || failedCondition(reasons, 1) || isTransientCancellation(reasons)) {
        throw new RetryStep("inbox raced");
      }
      throw new Error(`enqueueInbox refused (${reasons.map((r) => r.Code).join(",")})`);
    });
  }

  /**
   * Delivers the submission's undelivered messages of `kinds`, in acceptance order: each becomes
   * a `user_message` record, appended in the same transaction that marks it delivered and
   * lowers the pending count under the fence.
   */
  async drainInbox(request: InboxDrain): Promise<ConversationRecord[]> {
    const ctx = this.#ctx;
    const delivered: ConversationRecord[] = [];
    return rerunOnRace("drainInbox", async () => {
      const state = await loadState(ctx, request.submissionId);
      if (!state) throw new SubmissionNotFound(request.submissionId);
      if (str(state, "status") !== "running" || str(state, "attemptId") !== request.attemptId) {
        throw new ClaimLost(`submission ${request.submissionId} is not running under attempt ${request.attemptId}`);
      }
      // The counter on the state item answers the common "nothing to deliver" without a Query.
      const pending =
        (num(state, "inboxPending") ?? 0) === 0
          ? []
          : (await this.#undelivered(request.submissionId)).filter((m) => request.kinds.includes(reqStr(m, "kind") as InboxKind));
      if (pending.length === 0) {
        const conversationId = reqStr(state, "conversationId");
        if (request.expectedHead !== undefined && !(await this.#log.headIs(conversationId, request.expectedHead))) {
          throw new ClaimLost(`conversation ${conversationId} head is not ${request.expectedHead || "empty"}`);
        }
        return [...delivered];
      }
      const time = new Date(ctx.clock.now()).toISOString();
      const messages = await Promise.all(
        pending.map(async (m) => ({
          seq: reqNum(m, "seq"),
          kind: reqStr(m, "kind") as InboxKind,
          body: await this.#body(m),
          principalId: str(m, "principalId"),
        })),
      );
      const drafts: RecordDraft[] = messages.map((m) => ({
        kind: "user_message",
        conversationId: reqStr(state, "conversationId"),
        session: reqStr(state, "session"),
        submissionId: request.submissionId,
        attemptId: request.attemptId,
        time,
        payload: { body: m.body, origin: m.kind, ...(m.principalId === undefined ? {} : { principalId: m.principalId }) },
      }));
      try {
        await this.#log.append({
          conversationId: reqStr(state, "conversationId"),
          drafts,
          expectedHead: delivered.length === 0 ? request.expectedHead : undefined,
          fence: { submissionId: request.submissionId, attemptId: request.attemptId },
          fenceEpoch: claimEpoch(state),
          extraPerRecord: 1,
          onChunk: (records) => delivered.push(...records),
          fenceUpdate: (chunk) => {
            const e = new Expr();
            return e.setRaw(`${e.n("inboxPending")} = ${e.n("inboxPending")} - ${e.v(N(chunk.length))}`);
          },
          extraItems: (chunk, first) =>
            chunk.map((record, i) => {
              const e = new Expr().set("delivered", S(record.id));
              return updateItem(
                ctx,
                { pk: S(submissionPk(request.submissionId)), sk: S(inboxSk(messages[first + i]!.seq)) },
                e,
                `attribute_not_exists(${e.n("delivered")})`,
              );
            }),
        });
      } catch (error) {
        // Another drain of this attempt delivered some of them first: read the inbox again.
        if (error instanceof ExtrasRaced) throw new RetryStep(error.message);
        throw error;
      }
      return [...delivered];
    });
  }

  /** Undelivered messages of a submission, acceptance order. */
  async #undelivered(submissionId: string): Promise<Item[]> {
    return queryAll(this.#ctx, {
      KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
      FilterExpression: "attribute_not_exists(delivered)",
      ExpressionAttributeValues: { ":pk": S(submissionPk(submissionId)), ":prefix": S(INBOX_PREFIX) },
      ConsistentRead: true,
    });
  }

  async #bodyAttribute(body: string): Promise<Item> {
    if (Buffer.byteLength(body) <= this.#ctx.spillThresholdBytes) return { body: S(body) };
    return { bodyRef: S(await this.#ctx.blobs.putText(JSON.stringify(body))) };
  }

  async #body(message: Item): Promise<string> {
    const inline = str(message, "body");
    if (inline !== undefined) return inline;
    return JSON.parse(await this.#ctx.blobs.getText(reqStr(message, "bodyRef"))) as string;
  }
}

/** A run is in flight from its claim to its settlement: running, waiting, or queued after a claim. */
function inFlight(state: Item): boolean {
  switch (str(state, "status")) {
    case "running":
    case "waiting":
      return true;
    case "queued":
      return (num(state, "attemptCount") ?? 0) > 0 || num(state, "charge") === 0;
    default:
      return false;
  }
}
