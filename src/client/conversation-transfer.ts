import type { ExportLine, ImportAnswer } from "../protocol/conversation-export.ts";
import type { AttachmentRef } from "../protocol/records.ts";
import { networkFailure, readJson } from "./answers.ts";
import { sha256Hex } from "./attachment-upload.ts";
import { HarnessHttpError } from "./http-error.ts";

/**
 * An attachment's bytes (from an export, a download it names, or an import) do not match the
 * digest or size its line declares: the export or import stops there, nothing more is written or
 * uploaded, and the bytes are not kept.
 */
export class AttachmentDigestMismatch extends Error {
  readonly code = "attachment_digest_mismatch";
  /** The digest the line declares. */
  readonly digest: string;
  /** The digest of the bytes that came. */
  readonly actual: string;
  constructor(digest: string, actual: string, size: number, declaredSize: unknown) {
    super(`attachment ${digest}: the bytes that came (${size} bytes, ${actual}) do not match the declared ${declaredSize} bytes and digest`);
    this.name = "AttachmentDigestMismatch";
    this.digest = digest;
    this.actual = actual;
  }
}

/** Options of {@link ConversationTransferMethods.exportConversation}. */
export interface ExportOptions {
  /** The session of the instance (default `"default"`). */
  session?: string;
  /**
   * Download the attachments the server sends as a URL (those over 256 KiB) and put their bytes
   * in the line, so the export is self-contained. Default true. The client's credentials (its
   * headers, its SigV4 signature) go only to a URL on the server's own origin (scheme, host and
   * port), fetched without following redirects; a URL elsewhere (presigned blob storage) is
   * fetched with no credentials at all.
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
   * Every attachment's bytes, inline or downloaded, are checked against its digest and size.
   * @throws {HarnessHttpError} 404 `conversation_not_found`, `unknown_agent`
   * @throws {AttachmentDigestMismatch} bytes that do not match their line's digest
   */
  exportConversation(agent: string, instance: string, options?: ExportOptions): AsyncIterable<ExportLine>;
  /**
   * Rebuilds an export (its lines, or its JSON Lines text) as the conversation of a new session
   * here: each attachment carried inline is uploaded first (`uploadAttachment`: large ones go
   * directly to blob storage, so only the records travel in the import request), then
   * `POST …/import`. Record, conversation and submission ids are renewed. Each uploaded
   * attachment must come back with the digest its line declares ({@link AttachmentDigestMismatch}).
   * @throws {HarnessHttpError} 400 `invalid_export` (naming the bad line), `invalid_attachment`;
   * 409 `conversation_exists`; 413 `payload_too_large`
   */
  importConversation(agent: string, instance: string, exported: string | Iterable<ExportLine>, options?: ImportOptions): Promise<ImportAnswer>;
}

type Send = (
  method: "GET" | "POST",
  url: string,
  init: { bytes?: { data: Uint8Array; contentType: string }; signal?: AbortSignal; redirect?: RequestInit["redirect"] },
) => Promise<Response>;
type Upload = (data: Uint8Array, mediaType: string, options?: { signal?: AbortSignal }) => Promise<AttachmentRef>;

/**
 * The methods over the client's `send` (headers, signing: the server's origin only), its bare
 * `fetch` (no credentials: any other origin), URLs and uploads.
 */
export function conversationTransferMethods(
  send: Send,
  doFetch: typeof fetch,
  baseUrl: string,
  agentUrl: (agent: string, instance: string, suffix?: string) => string,
  upload: Upload,
): ConversationTransferMethods {
  const origin = new URL(`${baseUrl}/`).origin;

  /** An attachment's bytes from where its line says: with credentials only on the server's origin. */
  async function download(where: string, signal: AbortSignal | undefined): Promise<Uint8Array> {
    let url: URL;
    try {
      url = new URL(where, `${baseUrl}/`);
    } catch {
      throw new HarnessHttpError(0, "unexpected_response", `export names an attachment URL that is not one: ${JSON.stringify(where)}`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new HarnessHttpError(0, "unexpected_response", `export names an attachment URL that is not http(s): ${url.protocol}`);
    }
    let res: Response;
    if (url.origin === origin) {
      // A redirect would carry the client's own headers (an API key, SigV4's) wherever it points.
      res = await send("GET", url.href, { signal, redirect: "error" });
    } else {
      try {
        res = await doFetch(url.href, { method: "GET", signal });
      } catch (err) {
        throw networkFailure(err, url.href, signal);
      }
    }
    if (!res.ok) throw await HarnessHttpError.fromResponse(res);
    return new Uint8Array(await res.arrayBuffer());
  }

  async function* exportConversation(agent: string, instance: string, opts: ExportOptions = {}): AsyncGenerator<ExportLine> {
    const res = await send("GET", agentUrl(agent, instance, `/export${sessionQuery(opts.session)}`), { signal: opts.signal });
    if (!res.ok) throw await HarnessHttpError.fromResponse(res);
    for await (const text of jsonLines(res)) {
      const line = JSON.parse(text) as ExportLine;
      if (line.type === "attachment" && typeof line.data === "string") await checkBytes(line, fromBase64(line.data));
      if (line.type === "attachment" && line.data === undefined && line.url !== undefined && opts.inlineAttachments !== false) {
        const bytes = await download(line.url, opts.signal);
        await checkBytes(line, bytes);
        const { url: _url, ...rest } = line;
        yield { ...rest, data: base64(bytes) };
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
        const stored = await upload(fromBase64(line.data), line.mediaType, { signal: opts.signal });
        // The server digests what it stored: bytes that are not the line's would be imported under another name.
        if (stored.digest !== line.digest) throw new AttachmentDigestMismatch(String(line.digest), stored.digest, stored.size, line.size);
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

/** Throws {@link AttachmentDigestMismatch} unless `bytes` are what `line` declares. */
async function checkBytes(line: { digest: string; size: number }, bytes: Uint8Array): Promise<void> {
  const actual = `sha256:${await sha256Hex(bytes)}`;
  if (actual !== line.digest || bytes.byteLength !== line.size) throw new AttachmentDigestMismatch(line.digest, actual, bytes.byteLength, line.size);
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
