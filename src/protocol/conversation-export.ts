/**
 * A conversation's export (ADR 0034), as `GET /agents/:agent/:instance/export` streams it and
 * `POST /agents/:agent/:instance/import` (and `harness import`) takes it: JSON Lines, one
 * {@link ExportLine} each. First the header naming the exported session, then every record of
 * its log in log order, then one line per attachment its messages reference, then the end line,
 * whose counts tell a complete export from a cut-off one.
 */
import type { AttachmentRef, ConversationRecord } from "./records.ts";

/** The format's version (the header's `version`); an import refuses any other. */
export const EXPORT_VERSION = 1;

/**
 * Attachments up to this size travel inside an export (base64 `data`); larger ones as a `url`
 * to download them from (`/attachments/<digest>?agent=&instance=&session=`, through the exported
 * conversation, ADR 0046; relative to the server's base URL).
 */
export const EXPORT_INLINE_ATTACHMENT_BYTES = 256 * 1024;

/** The first line: the exported session and its conversation. */
export interface ExportHeader {
  type: "conversation";
  version: number;
  agent: string;
  instance: string;
  session: string;
  conversationId: string;
  /** Epoch ms the conversation was created. */
  createdAt: number;
}

/** One record of the log, as stored (its ids are the source's: an import renews them). */
export interface ExportRecordLine {
  type: "record";
  record: ConversationRecord;
}

/**
 * An attachment a record references: its bytes inline (`data`, base64) or where to fetch them
 * (`url`). An import line may carry neither when the target already holds the digest.
 */
export interface ExportAttachmentLine extends AttachmentRef {
  type: "attachment";
  data?: string;
  url?: string;
}

/** The last line: how many record and attachment lines came before it. */
export interface ExportEnd {
  type: "end";
  records: number;
  attachments: number;
}

export type ExportLine = ExportHeader | ExportRecordLine | ExportAttachmentLine | ExportEnd;

/** What an import answers (`201`). */
export interface ImportAnswer {
  agent: string;
  instance: string;
  session: string;
  /** The new conversation. */
  conversationId: string;
  /** Records written (all of the export's). */
  records: number;
  /** The attachments its records reference, every one stored here now (carried by the export, uploaded before, or there already). */
  attachments: number;
}
