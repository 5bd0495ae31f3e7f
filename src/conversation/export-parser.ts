/**
 * Reading a conversation export (ADR 0034, `protocol/conversation-export.ts`) before anything of
 * it is written: every line is checked, in order, and the first problem is an `InvalidExport`
 * naming its line. What passes is a header, records in strictly increasing id order (the log's),
 * and the referenced attachments with their bytes checked against their digests.
 */
import { InvalidExport } from "../errors.ts";
import {
  EXPORT_VERSION,
  type ExportHeader,
} from "../protocol/conversation-export.ts";
import { MAX_BODY_BYTES, MAX_IMPORT_RECORDS } from "../protocol/limits.ts";
import { type AttachmentRef, type ConversationRecord, RECORD_KINDS, type RecordKind } from "../protocol/records.ts";
import { contentDigest } from "./content-digest.ts";

/** An export, checked. */
export interface ParsedExport {
  header: ExportHeader;
  records: ConversationRecord[];
  /** One per attachment line: bytes when the line carried them, else the target must hold the digest. */
  attachments: { ref: AttachmentRef; data?: Uint8Array; line: number }[];
  /** Digests the records reference. */
  referenced: Set<string>;
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const KINDS = new Set<string>(RECORD_KINDS);

type Json = Record<string, unknown>;

/** What one import may bring (a test passes a smaller count). */
export interface ExportLimits {
  /** Most records (default {@link MAX_IMPORT_RECORDS}). */
  maxRecords?: number;
}

/**
 * Parses and checks an export's text (`InvalidExport` naming the line of the first problem). An
 * import obeys the limits a dispatch obeys: a `user_message` or `signal` body within
 * {@link MAX_BODY_BYTES}, a signal with a type; and it brings at most `maxRecords` records.
 */
export function parseExport(text: string, limits: ExportLimits = {}): ParsedExport {
  const maxRecords = limits.maxRecords ?? MAX_IMPORT_RECORDS;
  let header: ExportHeader | undefined;
  const records: ConversationRecord[] = [];
  const ids = new Set<string>();
  const referenced = new Set<string>();
  const attachments: ParsedExport["attachments"] = [];
  let ended = false;
  const lines = text.split("\n");
  for (const [index, raw] of lines.entries()) {
    const n = index + 1;
    if (raw.trim() === "") continue;
    const fail = (problem: string): never => {
      throw new InvalidExport(`line ${n}: ${problem}`);
    };
    if (ended) fail("a line after the end line");
    let line: Json;
    try {
      const value: unknown = JSON.parse(raw);
      if (value === null || typeof value !== "object" || Array.isArray(value)) return fail("expected a JSON object");
      line = value as Json;
    } catch (err) {
      return fail(`not JSON (${err instanceof Error ? err.message : String(err)})`);
    }
    if (header === undefined) {
      header = headerOf(line, fail);
      continue;
    }
    switch (line.type) {
      case "conversation":
        fail("a second header");
        break;
      case "record": {
        if (attachments.length > 0) fail("a record after the attachments");
        if (records.length >= maxRecords) fail(`more than ${maxRecords} records: an import brings at most ${maxRecords}`);
        const record = recordOf(line.record, fail);
        const previous = records.at(-1);
        if (previous !== undefined && record.id <= previous.id) fail(`record ${record.id} does not follow ${previous.id} (records must be in log order)`);
        if (record.kind === "compaction" && record.payload.firstKeptEntryId !== undefined && !ids.has(record.payload.firstKeptEntryId)) {
          fail(`compaction keeps ${record.payload.firstKeptEntryId}, which is not an earlier record`);
        }
        if (record.kind === "user_message") for (const ref of record.payload.attachments ?? []) referenced.add(ref.digest);
        ids.add(record.id);
        records.push(record);
        break;
      }
      case "attachment": {
        const { ref, data } = attachmentOf(line, fail);
        if (!referenced.has(ref.digest)) fail(`attachment ${ref.digest} is not referenced by any record`);
        if (attachments.some((a) => a.ref.digest === ref.digest)) fail(`attachment ${ref.digest} appears twice`);
        attachments.push({ ref, ...(data !== undefined ? { data } : {}), line: n });
        break;
      }
      case "end":
        if (line.records !== records.length || line.attachments !== attachments.length) {
          fail(`the end line counts ${String(line.records)} records and ${String(line.attachments)} attachments, the export holds ${records.length} and ${attachments.length}`);
        }
        ended = true;
        break;
      default:
        fail(`unknown line type ${JSON.stringify(line.type)} (expected conversation, record, attachment or end)`);
    }
  }
  if (header === undefined) throw new InvalidExport("empty: an export starts with its conversation header");
  if (!ended) throw new InvalidExport(`line ${lines.length}: the export ends without its end line (cut off?)`);
  return { header, records, attachments, referenced };
}

function headerOf(line: Json, fail: (problem: string) => never): ExportHeader {
  if (line.type !== "conversation") fail(`expected the conversation header first, got type ${JSON.stringify(line.type)}`);
  if (line.version !== EXPORT_VERSION) fail(`unsupported export version ${JSON.stringify(line.version)} (this server reads ${EXPORT_VERSION})`);
  for (const field of ["agent", "instance", "session", "conversationId"]) {
    if (typeof line[field] !== "string" || line[field] === "") fail(`the header's ${field} must be a non-empty string`);
  }
  if (typeof line.createdAt !== "number") fail("the header's createdAt must be a number");
  return line as unknown as ExportHeader;
}

function recordOf(value: unknown, fail: (problem: string) => never): ConversationRecord {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return fail("a record line needs a record object");
  const record = value as Json;
  if (typeof record.id !== "string" || record.id === "") fail("the record's id must be a non-empty string");
  if (typeof record.kind !== "string" || !KINDS.has(record.kind)) fail(`unknown record kind ${JSON.stringify(record.kind)}`);
  for (const field of ["conversationId", "session", "time"]) {
    if (typeof record[field] !== "string") fail(`record ${String(record.id)}: ${field} must be a string`);
  }
  for (const field of ["submissionId", "turnId", "attemptId"]) {
    if (record[field] !== undefined && typeof record[field] !== "string") fail(`record ${String(record.id)}: ${field} must be a string`);
  }
  const payload = record.payload;
  if (payload === null || typeof payload !== "object" || Array.isArray(payload)) fail(`record ${String(record.id)}: payload must be an object`);
  const problem = payloadProblem(record.kind as RecordKind, payload as Json);
  if (problem !== undefined) fail(`record ${String(record.id)} (${String(record.kind)}): ${problem}`);
  return record as unknown as ConversationRecord;
}

/** What an import relies on in a payload (the rest is carried as it is). */
function payloadProblem(kind: RecordKind, payload: Json): string | undefined {
  if (kind === "user_message" || kind === "signal") {
    if (typeof payload.body !== "string") return "body must be a string";
    // The dispatch's limit: a message bigger than a dispatch may send belongs in an attachment.
    if (Buffer.byteLength(payload.body, "utf8") > MAX_BODY_BYTES) return `body exceeds ${MAX_BODY_BYTES} bytes`;
  }
  if (kind === "signal" && (typeof payload.type !== "string" || payload.type === "")) return "a signal needs a type";
  if (kind === "user_message") {
    if (payload.attachments === undefined) return undefined;
    if (!Array.isArray(payload.attachments)) return "attachments must be an array";
    for (const ref of payload.attachments as unknown[]) {
      const problem = refProblem(ref);
      if (problem !== undefined) return problem;
    }
  }
  if (kind === "compaction" && payload.firstKeptEntryId !== undefined && typeof payload.firstKeptEntryId !== "string") {
    return "firstKeptEntryId must be a string";
  }
  if ((kind === "approval_requested" || kind === "callback_started" || kind === "tool_outcome") && typeof payload.callId !== "string") {
    return "callId must be a string";
  }
  return undefined;
}

function refProblem(value: unknown): string | undefined {
  if (value === null || typeof value !== "object") return "an attachment ref must be an object";
  const ref = value as Json;
  if (typeof ref.digest !== "string" || !DIGEST.test(ref.digest)) return `attachment digest must be "sha256:<64 lowercase hex>", got ${JSON.stringify(ref.digest)}`;
  if (typeof ref.mediaType !== "string" || ref.mediaType === "") return `attachment ${ref.digest}: mediaType must be a non-empty string`;
  if (!Number.isSafeInteger(ref.size) || (ref.size as number) < 0) return `attachment ${ref.digest}: size must be a whole number of bytes`;
  return undefined;
}

function attachmentOf(line: Json, fail: (problem: string) => never): { ref: AttachmentRef; data?: Uint8Array } {
  const problem = refProblem(line);
  if (problem !== undefined) fail(problem);
  const ref: AttachmentRef = { digest: line.digest as string, mediaType: line.mediaType as string, size: line.size as number };
  if (line.data === undefined) return { ref };
  if (typeof line.data !== "string" || line.data.length % 4 !== 0 || !BASE64.test(line.data)) fail(`attachment ${ref.digest}: data must be base64`);
  const data = new Uint8Array(Buffer.from(line.data as string, "base64"));
  if (data.byteLength !== ref.size) fail(`attachment ${ref.digest}: data holds ${data.byteLength} bytes, size says ${ref.size}`);
  if (contentDigest(data) !== ref.digest) fail(`attachment ${ref.digest}: the data's digest is ${contentDigest(data)}`);
  return { ref, data };
}
