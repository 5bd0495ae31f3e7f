import type { ExportLine, ImportAnswer } from "../protocol/conversation-export.ts";
import type { AttachmentRef } from "../protocol/records.ts";
import { readJson } from "./answers.ts";
import { HarnessHttpError } from "./http-error.ts";

/** Options of {@link ConversationTransferMethods.exportConversation}. */
export interface ExportOptions {
  /** The session of the instance (default `"default"`). */
  session?: string;
  /**
   * Download the attachments the server sends as a URL (those over 256 KiB) and put their bytes
   * in the line, so the export is self-contained. Default true.
   */
  inlineAttachments?: boolean;
  signal?: AbortSignal;
}

/** Options of {@link ConversationTransferMethods.importConversation}. */
export interface ImportOptions {
  /** The new session of the instance (default `"default"`). */
  session?: string;
  signal?: AbortSignal;
}

/** The client's part for moving conversations between deployments (ADR 0034). */
export interface ConversationTransferMethods {
  /**
   * A session's conversation as export lines (`GET …/export`), read as they stream: the header,
   * every record, the attachments, the end line. Write them as JSON Lines to keep a file.
   * @throws {HarnessHttpError} 404 `conversation_not_found`, `unknown_agent`
   */
  exportConversation(agent: string, instance: string, options?: ExportOptions): AsyncIterable<ExportLine>;
  /**
   * Rebuilds an export (its lines, or its JSON Lines text) as the conversation of a new session
   * here: each attachment carried inline is uploaded first (`uploadAttachment`: large ones go
   * directly to blob storage, so only the records travel in the import request), then
   * `POST …/import`. Record, conversation and submission ids are renewed.
   * @throws {HarnessHttpError} 400 `invalid_export` (naming the bad line), `invalid_attachment`;
   * 409 `conversation_exists`; 413 `payload_too_large`
   */
  importConversation(agent: string, instance: string, exported: string | Iterable<ExportLine>, options?: ImportOptions): Promise<ImportAnswer>;
}

type Send = (
  method: "GET" | "POST",
  url: string,
  init: { bytes?: { data: Uint8Array; contentType: string }; signal?: AbortSignal },
) => Promise<Response>;
type Upload = (data: Uint8Array, mediaType: string, options?: { signal?: AbortSignal }) => Promise<AttachmentRef>;

/** The methods over the client's `send` (headers, signing), URLs and uploads. */
export function conversationTransferMethods(
  send: Send,
  baseUrl: string,
  agentUrl: (agent: string, instance: string, suffix?: string) => string,
  upload: Upload,
): ConversationTransferMethods {
  async function* exportConversation(agent: string, instance: string, opts: ExportOptions = {}): AsyncGenerator<ExportLine> {
    const res = await send("GET", agentUrl(agent, instance, `/export${sessionQuery(opts.session)}`), { signal: opts.signal });
    if (!res.ok) throw await HarnessHttpError.fromResponse(res);
    for await (const text of jsonLines(res)) {
      const line = JSON.parse(text) as ExportLine;
      if (line.type === "attachment" && line.data === undefined && line.url !== undefined && opts.inlineAttachments !== false) {
        const bytes = await send("GET", new URL(line.url, `${baseUrl}/`).href, { signal: opts.signal });
        if (!bytes.ok) throw await HarnessHttpError.fromResponse(bytes);
        const { url: _url, ...rest } = line;
        yield { ...rest, data: base64(new Uint8Array(await bytes.arrayBuffer())) };
        continue;
      }
      yield line;
    }
  }

  async function importConversation(agent: string, instance: string, exported: string | Iterable<ExportLine>, opts: ImportOptions = {}): Promise<ImportAnswer> {
    // Lines that are not JSON go as they are: the server names them in its refusal.
    const lines: (string | ExportLine)[] = typeof exported === "string" ? exported.split("\n").filter((l) => l.trim() !== "") : [...exported];
    const body: string[] = [];
    for (const entry of lines) {
      const line = typeof entry === "string" ? parseLine(entry) : entry;
      if (line?.type === "attachment" && typeof line.data === "string" && typeof line.mediaType === "string") {
        await upload(fromBase64(line.data), line.mediaType, { signal: opts.signal });
        const { data: _data, url: _url, ...ref } = line;
        body.push(JSON.stringify(ref));
        continue;
      }
      body.push(typeof entry === "string" ? entry : JSON.stringify(entry));
    }
    const data = new TextEncoder().encode(body.map((l) => `${l}\n`).join(""));
    const res = await send("POST", agentUrl(agent, instance, `/import${sessionQuery(opts.session)}`), {
      bytes: { data, contentType: "application/jsonl" },
      signal: opts.signal,
    });
    if (!res.ok) throw await HarnessHttpError.fromResponse(res);
    return (await readJson(res)) as unknown as ImportAnswer;
  }

  return { exportConversation, importConversation };
}

function sessionQuery(session: string | undefined): string {
  return session === undefined ? "" : `?session=${encodeURIComponent(session)}`;
}

/** The line as an export line, or undefined when it is not JSON. */
function parseLine(text: string): Partial<Extract<ExportLine, { type: "attachment" }>> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null ? (value as Partial<Extract<ExportLine, { type: "attachment" }>>) : undefined;
  } catch {
    return undefined;
  }
}

/** The non-empty lines of a streamed body, decoded as UTF-8. */
async function* jsonLines(res: Response): AsyncGenerator<string> {
  if (!res.body) return;
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (line.trim() !== "") yield line;
    }
  }
  buffered += decoder.decode();
  if (buffered.trim() !== "") yield buffered;
}

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}
