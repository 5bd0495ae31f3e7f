import { completedMessageText } from "../client/message-view.ts";
import type { ConversationRecord } from "../protocol/records.ts";
import { retryReasonText, retryTimeText } from "./retry-text.ts";
import { terminalJson, terminalText } from "./terminal-text.ts";

/** A server's string on one line: every control character escaped (issue 33). */
const one = (text: string | number | undefined): string => terminalText(String(text ?? ""));
/** A server's text whose line breaks are meant (message bodies, the model's text): the rest escaped. */
const body = (text: string): string => terminalText(text, { layout: true });

/** What `full` holds beyond `shown` when it continues it; else nothing (printed text stays). */
function rest(full: string, shown: string): string {
  return full.startsWith(shown) ? full.slice(shown.length) : "";
}

/** Which assistant message a record belongs to. */
function messageKey(record: ConversationRecord): string {
  return `${record.attemptId ?? ""}:${record.turnId ?? ""}`;
}

/** Where the renderer writes: a terminal (spinner and colour) or a pipe (plain text). */
export interface TerminalOutput {
  write(text: string): void;
  /** A terminal gets the spinner and colours; a pipe gets plain text. */
  readonly isTTY: boolean;
}

const SPINNER_FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const SPINNER_INTERVAL_MS = 80;
/** Characters of a tool's arguments or result shown on its line. */
const TOOL_TEXT_CHARS = 120;

/**
 * Renders conversation records for a person as they arrive: user messages, the assistant's text
 * streamed as it comes, tool calls with their outcomes, compactions and settlements. On a
 * terminal a spinner shows while a turn runs and nothing has been printed for it yet. Every
 * string from the server is printed through `terminalText`: a model's escape sequences show, and
 * never act on the terminal.
 */
export class RecordRenderer {
  readonly #out: TerminalOutput;
  readonly #color: boolean;
  /** True when the cursor is not at the start of a line. */
  #midLine = false;
  #spinner: ReturnType<typeof setInterval> | undefined;
  #frame = 0;
  /** The newest attempt seen per submission. */
  readonly #attempts = new Map<string, string>();
  /** Submissions whose latest message has not completed normally. */
  readonly #unfinished = new Set<string>();
  /**
   * What each message (`attemptId:turnId`) streamed as deltas: a completed message prints the
   * rest, all of it when its deltas were folded before this read (ADR 0034).
   */
  readonly #streamed = new Map<string, { text: string; thinking: string }>();

  constructor(out: TerminalOutput) {
    this.#out = out;
    this.#color = out.isTTY && process.env.NO_COLOR === undefined;
  }

  render(record: ConversationRecord): void {
    this.#noteSupersede(record);
    switch (record.kind) {
      case "user_message": {
        const origin = record.payload.origin === undefined ? "" : this.#dim(`[${one(record.payload.origin)}] `);
        this.#line(`${this.#bold("›")} ${origin}${body(record.payload.body)}`);
        return this.#spin();
      }
      case "signal":
        this.#line(`${this.#bold("›")} ${this.#dim(`signal ${one(record.payload.type)}:`)} ${body(record.payload.body)}`);
        return this.#spin();
      case "assistant_message_started":
        this.#unfinished.add(record.submissionId ?? "");
        return this.#spin();
      case "assistant_text_delta":
        this.#unfinished.add(record.submissionId ?? "");
        this.#streamedOf(record).text += record.payload.text;
        return this.#text(body(record.payload.text));
      case "assistant_thinking_delta":
        this.#unfinished.add(record.submissionId ?? "");
        this.#streamedOf(record).thinking += record.payload.text;
        return this.#text(this.#dim(body(record.payload.text)));
      case "assistant_tool_call":
        this.#line(`${this.#cyan("⚙")} ${one(record.payload.toolName)}(${clip(terminalJson(record.payload.args ?? {}))})`);
        return this.#spin();
      case "tool_outcome": {
        const text = (record.payload.content ?? []).map((c) => (c.type === "text" ? c.text : `[${c.mimeType}]`)).join(" ");
        const mark = record.payload.isError ? this.#red("✗") : this.#green("✓");
        this.#line(`  ${mark} ${one(record.payload.toolName)}: ${clip(one(text.replace(/\s+/g, " ")))}`);
        return this.#spin();
      }
      case "assistant_message_completed": {
        const streamed = this.#streamedOf(record);
        this.#streamed.delete(messageKey(record));
        const completed = completedMessageText(record.payload);
        const thinking = rest(completed.thinking, streamed.thinking);
        const text = rest(completed.text, streamed.text);
        if (thinking !== "") this.#text(this.#dim(body(thinking)));
        if (text !== "") this.#text(body(text));
        const ended = record.payload.message.body as { stopReason?: string; errorMessage?: string } | undefined;
        if (ended?.stopReason === "error" || ended?.stopReason === "aborted") {
          this.#line(this.#dim(`(turn ended: ${one(ended.errorMessage ?? ended.stopReason)})`));
        } else {
          this.#unfinished.delete(record.submissionId ?? "");
          this.#endLine();
        }
        return;
      }
      case "compaction":
        this.#line(this.#dim(`[compacted: ${record.payload.endIdx - record.payload.startIdx} message(s) summarized${record.payload.reason ? `, ${one(record.payload.reason)}` : ""}]`));
        return;
      case "task_spawned":
        this.#line(this.#dim(`↳ task → ${one(record.payload.agent)}/${one(record.payload.childInstance)}`));
        return;
      case "approval_requested": {
        const p = record.payload;
        this.#line(`  ${this.#bold("⏸")} ${one(p.toolName)} ${clip(terminalJson(p.args ?? {}))} ${this.#dim(`waits for approval (call ${one(p.callId)}, until ${one(p.expiresAt)})`)}`);
        return this.#stopSpinner();
      }
      case "approval_decided": {
        const p = record.payload;
        const what = p.approved ? this.#green("approved") : this.#red(p.expired ? "denied (approval expired)" : "denied");
        this.#line(`  ${what} ${this.#dim(`call ${one(p.callId)}`)}${p.reason && !p.expired ? `: ${one(p.reason)}` : ""}`);
        return this.#spin();
      }
      case "callback_started":
        this.#line(`  ${this.#bold("⏸")} ${one(record.payload.toolName)} ${this.#dim(`waits for its callback (call ${one(record.payload.callId)}, until ${one(record.payload.expiresAt)})`)}`);
        return this.#stopSpinner();
      case "submission_retrying": {
        // Why nothing streams: the run waits for its next try (ADR 0053).
        const p = record.payload;
        const attempts = p.attemptCount > 0 ? `, attempt ${one(p.attemptCount)} of ${one(p.maxAttempts)}` : "";
        this.#line(this.#dim(`  ↻ retrying: ${retryReasonText(p)}, next try ${retryTimeText(p.nextAttemptAt)}${attempts}: ${clip(one(p.error.replace(/\s+/g, " ")))}`));
        return this.#spin();
      }
      case "submission_settled": {
        const p = record.payload;
        const usage = p.usage === undefined ? "" : this.#dim(` (${one(p.usage.input)} in / ${one(p.usage.output)} out tokens${p.cost ? `, $${p.cost.total.toFixed(6)}` : ""})`);
        if (p.status === "succeeded") this.#line(`${this.#green("— succeeded")}${usage}`);
        else this.#line(`${this.#red(`— failed [${one(p.errorCode ?? "unknown")}]`)} ${one(p.error)}${usage}`);
        this.#stopSpinner();
        return;
      }
      default:
        return;
    }
  }

  /**
   * Text already printed cannot be taken back: when a new attempt of a submission follows one
   * whose message never completed (or failed), say that the text above was abandoned (ADR 0020).
   */
  #noteSupersede(record: ConversationRecord): void {
    const { submissionId, attemptId } = record;
    if (submissionId === undefined || attemptId === undefined) return;
    const previous = this.#attempts.get(submissionId);
    this.#attempts.set(submissionId, attemptId);
    if (previous === undefined || previous === attemptId || !this.#unfinished.delete(submissionId)) return;
    this.#line(this.#dim("(attempt interrupted: the text above is abandoned; a new attempt runs the turn again)"));
  }

  /** Stops the spinner and ends the current line. */
  finish(): void {
    this.#stopSpinner();
    this.#endLine();
  }

  #streamedOf(record: ConversationRecord): { text: string; thinking: string } {
    const key = messageKey(record);
    let streamed = this.#streamed.get(key);
    if (!streamed) this.#streamed.set(key, (streamed = { text: "", thinking: "" }));
    return streamed;
  }

  #text(text: string): void {
    this.#stopSpinner();
    this.#out.write(text);
    if (text !== "") this.#midLine = !text.endsWith("\n");
  }

  #line(text: string): void {
    this.#stopSpinner();
    this.#endLine();
    this.#out.write(`${text}\n`);
  }

  #endLine(): void {
    if (!this.#midLine) return;
    this.#out.write("\n");
    this.#midLine = false;
  }

  /** Shows the spinner until the next output (terminals only). */
  #spin(): void {
    if (!this.#out.isTTY || this.#spinner !== undefined) return;
    this.#endLine();
    const draw = () => this.#out.write(`\r${this.#dim(SPINNER_FRAMES[this.#frame++ % SPINNER_FRAMES.length]!)}`);
    draw();
    this.#spinner = setInterval(draw, SPINNER_INTERVAL_MS);
    this.#spinner.unref();
  }

  #stopSpinner(): void {
    if (this.#spinner === undefined) return;
    clearInterval(this.#spinner);
    this.#spinner = undefined;
    this.#out.write("\r\x1b[K");
  }

  #paint(code: string, text: string): string {
    return this.#color ? `\x1b[${code}m${text}\x1b[0m` : text;
  }
  #dim = (t: string) => this.#paint("2", t);
  #bold = (t: string) => this.#paint("1", t);
  #red = (t: string) => this.#paint("31", t);
  #green = (t: string) => this.#paint("32", t);
  #cyan = (t: string) => this.#paint("36", t);
}

function clip(text: string): string {
  return text.length > TOOL_TEXT_CHARS ? `${text.slice(0, TOOL_TEXT_CHARS)}…` : text;
}
