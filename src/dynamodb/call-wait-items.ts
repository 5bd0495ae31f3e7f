/**
 * The items of call waits on DynamoDB (ADR 0025): a call wait in its submission's partition
 * (`SUB#<id>` / `CALL#<callId>`: `body`, the registration's JSON, and `answer` once answered), a
 * callback's pointer item (`CB#<digest>` / `CB`) naming its submission and call, the updates that
 * register them with the append of their announcing record, and reading them back.
 */
import { GetItemCommand, type TransactWriteItem } from "@aws-sdk/client-dynamodb";
import type { RecordDraft } from "../protocol/records.ts";
import { type CallAnswer, type CallWait, callWaitOf } from "../store/call-wait.ts";
import { noteBlobRefs } from "./blob-refs.ts";
import type { StoreContext } from "./context.ts";
import { Expr } from "./expression.ts";
import { type Item, reqStr, S, str } from "./item.ts";
import { submissionPk } from "./keys.ts";
import { updateItem } from "./transact.ts";

/** The sort key of a call wait in its submission's partition (sorts apart from `IN`, `ST`, `AT#`, `IB#`). */
export function callWaitKey(submissionId: string, callId: string): Item {
  return { pk: S(submissionPk(submissionId)), sk: S(`CALL#${callId}`) };
}

function callbackKey(digest: string): Item {
  return { pk: S(`CB#${digest}`), sk: S("CB") };
}

/** Args over this size are kept in S3 (the item must stay under 400 KB with the rest). */
const ARGS_INLINE_BYTES = 64 * 1024;

/**
 * The registration updates of the call waits `drafts` announce, by draft index (one or two items
 * each): what the append's transaction writes along with the records. Large approval arguments
 * go to S3 first (so this is async, before the append).
 */
export async function registrationItems(ctx: StoreContext, drafts: readonly RecordDraft[]): Promise<Map<number, TransactWriteItem[]>> {
  const out = new Map<number, TransactWriteItem[]>();
  for (const [i, draft] of drafts.entries()) {
    const wait = callWaitOf(draft);
    if (wait === undefined) continue;
    const { args, ...rest } = wait;
    const e = new Expr();
    const body = e.n("body");
    e.setRaw(`${body} = if_not_exists(${body}, ${e.v(S(JSON.stringify(rest)))})`);
    if (args !== undefined) {
      const json = JSON.stringify(args);
      const attr = Buffer.byteLength(json) > ARGS_INLINE_BYTES ? "argsRef" : "args";
      const value = attr === "args" ? json : await ctx.blobs.putText(json);
      // A spill is its submission's (ADR 0034: deleted with its conversation unless shared).
      if (attr === "argsRef") await noteBlobRefs(ctx, submissionPk(wait.submissionId), [value]);
      const n = e.n(attr);
      e.setRaw(`${n} = if_not_exists(${n}, ${e.v(S(value))})`);
    }
    const items = [updateItem(ctx, callWaitKey(wait.submissionId, wait.callId), e)];
    if (wait.callbackDigest !== undefined) {
      const p = new Expr();
      const sub = p.n("submissionId");
      const call = p.n("callId");
      p.setRaw(`${sub} = if_not_exists(${sub}, ${p.v(S(wait.submissionId))}), ${call} = if_not_exists(${call}, ${p.v(S(wait.callId))})`);
      items.push(updateItem(ctx, callbackKey(wait.callbackDigest), p));
    }
    out.set(i, items);
  }
  return out;
}

export async function getCallWait(ctx: StoreContext, submissionId: string, callId: string): Promise<CallWait | undefined> {
  const res = await ctx.dynamo.send(new GetItemCommand({ TableName: ctx.table, Key: callWaitKey(submissionId, callId), ConsistentRead: true }));
  return res.Item && callWaitFromItem(ctx, res.Item);
}

export async function findCallback(ctx: StoreContext, digest: string): Promise<CallWait | undefined> {
  const res = await ctx.dynamo.send(new GetItemCommand({ TableName: ctx.table, Key: callbackKey(digest), ConsistentRead: true }));
  if (!res.Item) return undefined;
  return getCallWait(ctx, reqStr(res.Item, "submissionId"), reqStr(res.Item, "callId"));
}

async function callWaitFromItem(ctx: StoreContext, item: Item): Promise<CallWait | undefined> {
  const body = str(item, "body");
  if (body === undefined) return undefined;
  const wait = JSON.parse(body) as CallWait;
  const args = str(item, "args");
  const ref = str(item, "argsRef");
  if (args !== undefined) wait.args = JSON.parse(args);
  else if (ref !== undefined) wait.args = JSON.parse(await ctx.blobs.getText(ref));
  const answer = str(item, "answer");
  if (answer !== undefined) wait.answer = JSON.parse(answer) as CallAnswer;
  return wait;
}
