/**
 * A conversation's export (ADR 0034, format in `protocol/conversation-export.ts`): the header,
 * every record in log order (read a page at a time, so a long log streams in bounded memory),
 * one line per attachment its messages reference (bytes inline up to
 * {@link EXPORT_INLINE_ATTACHMENT_BYTES}, else a download URL), and the end line with the counts.
 * The records keep their ids here; an import renews them.
 */
import { attachmentDigests } from "../conversation/attachment-digests.ts";
import { isHarnessError } from "../errors.ts";
import {
  EXPORT_INLINE_ATTACHMENT_BYTES,
  EXPORT_VERSION,
  type ExportHeader,
  type ExportLine,
} from "../protocol/conversation-export.ts";
import type { AttachmentStore, ConversationStore } from "../store/store.ts";
import type { SessionKey } from "../store/submission.ts";

const PAGE = 500;

/** The header (read before anything streams, so a missing conversation is a plain 404) and the lines. */
export interface ConversationExport {
  header: ExportHeader;
  lines: AsyncIterable<ExportLine>;
}

export async function exportConversation(
  store: Pick<ConversationStore, "getConversation" | "readRecords"> & Pick<AttachmentStore, "getAttachment" | "getAttachmentRef">,
  key: SessionKey,
): Promise<ConversationExport> {
  const conversation = await store.getConversation(key);
  const header: ExportHeader = { type: "conversation", version: EXPORT_VERSION, ...key, conversationId: conversation.id, createdAt: conversation.createdAt };
  async function* lines(): AsyncGenerator<ExportLine> {
    yield header;
    const digests = new Set<string>();
    let records = 0;
    for (let after = ""; ; ) {
      const page = await store.readRecords(conversation.id, after, PAGE);
      for (const record of page) yield { type: "record", record };
      records += page.length;
      attachmentDigests(page, digests);
      if (page.length < PAGE) break;
      after = page.at(-1)!.id;
    }
    let attachments = 0;
    for (const digest of digests) {
      let ref;
      try {
        ref = await store.getAttachmentRef(digest);
      } catch (err) {
        // Gone from the store (the records still name it): an import needs it from elsewhere.
        if (isHarnessError(err, "attachment_not_found")) continue;
        throw err;
      }
      attachments += 1;
      if (ref.size > EXPORT_INLINE_ATTACHMENT_BYTES) {
        // Through the exported conversation: a reader who may export it may read what it references (ADR 0046).
        yield { type: "attachment", ...ref, url: `/attachments/${digest}?${new URLSearchParams({ agent: key.agent, instance: key.instance, session: key.session })}` };
        continue;
      }
      const { data } = await store.getAttachment(digest);
      yield { type: "attachment", ...ref, data: Buffer.from(data).toString("base64") };
    }
    yield { type: "end", records, attachments };
  }
  return { header, lines: lines() };
}
