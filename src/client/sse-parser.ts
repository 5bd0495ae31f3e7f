/** One dispatched server-sent event. */
export interface SseEvent {
  /** The `event:` field, or `"message"` when the event named none. */
  type: string;
  /** The `data:` lines joined with `\n`. */
  data: string;
  /** The last event id in force when the event was dispatched (`""` if none yet). */
  lastEventId: string;
}

/** Where {@link SseParser} reports what it reads. */
export interface SseHandlers {
  /** A complete event (a blank line ended a block that had data). */
  event(event: SseEvent): void;
  /** A valid `retry:` field: the reconnection delay in ms. */
  retry?(ms: number): void;
  /** A comment line, without its leading `:`. */
  comment?(text: string): void;
}

/**
 * An incremental `text/event-stream` parser following the WHATWG rules: lines end with CRLF, LF
 * or CR (also across chunks); `:` starts a comment; a field's value loses one leading space;
 * `data:` lines join with `\n`; `id:` (without NUL) sets the last event id, which persists across
 * events and becomes {@link lastEventId} when its block ends, even a block without data; `retry:`
 * counts only when all digits; an unterminated last block is never dispatched. Feed it decoded
 * text (a streaming `TextDecoder`, which also drops a leading BOM).
 */
export class SseParser {
  readonly #handlers: SseHandlers;
  #pending = "";
  #skipLf = false;
  #data = "";
  #type = "";
  #idBuffer: string;
  #lastEventId: string;

  /** `lastEventId` seeds the id when resuming a stream (it persists until an `id:` changes it). */
  constructor(handlers: SseHandlers, lastEventId = "") {
    this.#handlers = handlers;
    this.#idBuffer = lastEventId;
    this.#lastEventId = lastEventId;
  }

  /** The id to resume from: the last event id of the last dispatched block. */
  get lastEventId(): string {
    return this.#lastEventId;
  }

  /** Parses the next piece of text, reporting every event it completes. */
  feed(chunk: string): void {
    if (chunk === "") return;
    // A CR that ended the previous chunk may be the first half of a CRLF.
    if (this.#skipLf && chunk.startsWith("\n")) chunk = chunk.slice(1);
    this.#skipLf = false;
    const text = this.#pending + chunk;
    const eol = /\r\n|\r|\n/g;
    eol.lastIndex = this.#pending.length; // the pending part holds no line end
    let start = 0;
    for (let m = eol.exec(text); m !== null; m = eol.exec(text)) {
      this.#line(text.slice(start, m.index));
      start = m.index + m[0].length;
      if (m[0] === "\r" && start === text.length) this.#skipLf = true;
    }
    this.#pending = text.slice(start);
  }

  #line(line: string): void {
    if (line === "") return this.#dispatch();
    if (line.startsWith(":")) return this.#handlers.comment?.(line.slice(1));
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.#data += `${value}\n`;
    else if (field === "event") this.#type = value;
    else if (field === "id" && !value.includes("\0")) this.#idBuffer = value;
    else if (field === "retry" && /^[0-9]+$/.test(value)) this.#handlers.retry?.(Number(value));
  }

  #dispatch(): void {
    this.#lastEventId = this.#idBuffer;
    const data = this.#data;
    const type = this.#type;
    this.#data = "";
    this.#type = "";
    if (data === "") return;
    this.#handlers.event({ type: type || "message", data: data.slice(0, -1), lastEventId: this.#lastEventId });
  }
}
