/**
 * Importing a conversation export (ADR 0034) into a new session: the whole export is read and
 * checked first (`parseExport`; the attachment policy; every referenced attachment carried or
 * already stored; the target session without a conversation), so bad input writes nothing. Then
 * the carried attachments are stored (content-addressed: one already there costs nothing) and the
 * records appended as copies, which renews what must be new here: record ids (the store mints
 * them), the conversation and session address, and submission ids (ids of another deployment
 * could name a submission of this one; each old id maps to one new id, so a run's records stay
 * together, and an approval's `approvalId` follows its submission).
 */
import { parseExport } from "../conversation/export-parser.ts";
import { newId } from "../conversation/ids.ts";
import { ConversationExists, InvalidExport, isHarnessError } from "../errors.ts";
import { attachmentProblem, type AttachmentPolicy } from "../protocol/attachment-policy.ts";
import type { ImportAnswer } from "../protocol/conversation-export.ts";
import type { ConversationRecord } from "../protocol/records.ts";
import type { AttachmentStore, ConversationStore } from "../store/store.ts";
import { type SessionKey, sessionKeyString } from "../store/submission.ts";
import { copyIntoNewConversation, hasConversation } from "./conversation-copy.ts";

export type ImportStore = Pick<ConversationStore, "getConversation" | "ensureConversation" | "appendRecords"> &
  Pick<AttachmentStore, "getAttachmentRef" | "putAttachment">;

export async function importConversation(
  deps: { store: ImportStore; policy: AttachmentPolicy; now: number },
  target: SessionKey,
  text: string,
): Promise<ImportAnswer> {
  const { store, policy } = deps;
  const parsed = parseExport(text);
  const carried = new Set<string>();
  for (const { ref, data, line } of parsed.attachments) {
    if (data === undefined) continue;
    const problem = attachmentProblem(policy, ref.mediaType, data);
    if (problem !== undefined) throw new InvalidExport(`line ${line}: attachment ${ref.digest}: ${problem}`);
    carried.add(ref.digest);
  }
  for (const digest of parsed.referenced) {
    if (carried.has(digest) || (await isStored(store, digest))) continue;
    throw new InvalidExport(
      `attachment ${digest} is referenced but neither carried by the export nor stored here (upload it first, or export with its bytes: harness export fills them in)`,
    );
  }
  if (await hasConversation(store, target)) throw new ConversationExists(sessionKeyString(target));

  for (const { ref, data } of parsed.attachments) if (data !== undefined) await store.putAttachment(ref.mediaType, data);
  const records = renewSubmissionIds(parsed.records, deps.now);
  const { conversationId } = await copyIntoNewConversation(store, target, records, deps.now);
  return { ...target, conversationId, records: records.length, attachments: parsed.referenced.size };
}

async function isStored(store: Pick<AttachmentStore, "getAttachmentRef">, digest: string): Promise<boolean> {
  try {
    await store.getAttachmentRef(digest);
    return true;
  } catch (err) {
    if (isHarnessError(err, "attachment_not_found")) return false;
    throw err;
  }
}

/** The records with each submission id replaced by a new one (the same for all of a submission's records). */
function renewSubmissionIds(records: readonly ConversationRecord[], now: number): ConversationRecord[] {
  const renewed = new Map<string, string>();
  const renew = (id: string) => {
    let fresh = renewed.get(id);
    if (fresh === undefined) {
      fresh = newId(now);
      renewed.set(id, fresh);
    }
    return fresh;
  };
  return records.map((record) => {
    if (record.submissionId === undefined) return record;
    const submissionId = renew(record.submissionId);
    if (record.kind === "approval_requested" && record.payload.approvalId === `${record.submissionId}/${record.payload.callId}`) {
      return { ...record, submissionId, payload: { ...record.payload, approvalId: `${submissionId}/${record.payload.callId}` } };
    }
    return { ...record, submissionId } as ConversationRecord;
  });
}
