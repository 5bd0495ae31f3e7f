import type { StreamFn } from "@earendil-works/pi-agent-core";
import type { Message } from "@earendil-works/pi-ai";
import type { ConversationRecord } from "../../src/protocol/records.ts";
import { serve, type ServeOptions, type ServerHandle } from "../../src/server/server.ts";
import type { Store } from "../../src/store/store.ts";
import type { SubmissionStatus } from "../../src/store/submission.ts";
import { createRuntime, type Runtime } from "../../src/runtime/runtime.ts";
import { clockTool } from "../../src/agent/clock-tool.ts";
import { localModel } from "../../src/agent/local-model.ts";
import { createMemoryStore } from "../../src/memory/index.ts";
import { createApp, type AppOptions } from "../../src/http/app.ts";

/**
 * Holds model calls whose last user message contains "[hold]" until released, so a test can
 * keep a run in flight (to steer it, or to watch the live tail).
 */
export class Gate {
  #open!: () => void;
  #promise!: Promise<void>;
  #entered: (() => void)[] = [];
  /** Model calls that reached the gate. */
  held = 0;
  constructor() {
    this.close();
  }
  /** Closes the gate again and forgets earlier arrivals. */
  close(): void {
    this.held = 0;
    this.#promise = new Promise((resolve) => (this.#open = resolve));
  }
  release(): void {
    this.#open();
  }
  /** Resolves once a model call is waiting at the gate. */
  entered(): Promise<void> {
    if (this.held > 0) return Promise.resolve();
    return new Promise((resolve) => this.#entered.push(resolve));
  }
  async pass(signal: AbortSignal | undefined): Promise<void> {
    this.held++;
    for (const f of this.#entered.splice(0)) f();
    await new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      signal?.addEventListener("abort", () => resolve(), { once: true });
      void this.#promise.then(resolve);
    });
  }
}

function lastUserText(messages: readonly Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== "user") continue;
    if (typeof m.content === "string") return m.content;
    return m.content.map((c) => (c.type === "text" ? c.text : "")).join("");
  }
  return "";
}

/** The keyless local model behind a {@link Gate}. */
export function gatedLocalModel(gate: Gate) {
  const base = localModel({ chunkSize: 4 });
  const streamFn: StreamFn = async (model, context, options) => {
    if (lastUserText(context.messages).includes("[hold]")) await gate.pass(options?.signal);
    return base.streamFn(model, context, options);
  };
  return { model: base.model, streamFn };
}

export interface TestServer {
  runtime: Runtime;
  store: Store;
  gate: Gate;
  server: ServerHandle;
  url: string;
  close(): Promise<void>;
}

/** A started runtime on the memory store with agent `assistant`, served on 127.0.0.1:0. */
export async function startTestServer(options: ServeOptions = {}): Promise<TestServer> {
  const { runtime, store, gate } = await startRuntime();
  const server = await serve(runtime, { port: 0, hostname: "127.0.0.1", log: () => {}, ...options });
  return {
    runtime,
    store,
    gate,
    server,
    url: server.url,
    async close() {
      gate.release();
      await server.close();
      await runtime.close();
    },
  };
}

/** A started runtime (no server) for `app.request` tests. */
export async function startRuntime(): Promise<{ runtime: Runtime; store: Store; gate: Gate }> {
  const store = createMemoryStore();
  const gate = new Gate();
  const runtime = createRuntime({
    agents: {
      assistant: {
        initialize: ({ instance }) => ({
          ...gatedLocalModel(gate),
          systemPrompt: `You are the assistant for workspace "${instance}".`,
          tools: [clockTool()],
        }),
      },
    },
    store,
    flushPolicy: { bytes: 0, intervalMs: 0 },
    onObserverError: () => {},
  });
  await runtime.start();
  return { runtime, store, gate };
}

export function appFor(runtime: Runtime, options: AppOptions = {}) {
  return createApp(runtime, { log: () => {}, ...options });
}

/** One parsed SSE frame (comments and `retry:` kept apart). */
export interface SseFrame {
  id?: string;
  event?: string;
  data?: string;
  retry?: number;
  comments: string[];
}

/** Parses SSE text into frames (blank-line separated). */
export function parseSse(text: string): SseFrame[] {
  const frames: SseFrame[] = [];
  for (const block of text.split(/\n\n/)) {
    if (block.trim() === "") continue;
    const frame: SseFrame = { comments: [] };
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) frame.comments.push(line.slice(1).trim());
      else if (line.startsWith("id: ")) frame.id = line.slice(4);
      else if (line.startsWith("event: ")) frame.event = line.slice(7);
      else if (line.startsWith("data: ")) data.push(line.slice(6));
      else if (line.startsWith("retry: ")) frame.retry = Number(line.slice(7));
    }
    if (data.length > 0) frame.data = data.join("\n");
    frames.push(frame);
  }
  return frames;
}

/** The records carried by SSE frames. */
export function recordsOf(frames: SseFrame[]): ConversationRecord[] {
  return frames.filter((f) => f.data !== undefined).map((f) => JSON.parse(f.data!) as ConversationRecord);
}

/** Reads an SSE response to its end. */
export async function readAll(res: Response): Promise<string> {
  return await res.text();
}

/**
 * Reads an SSE response frame by frame, calling `until` after each; stops (cancelling the body)
 * when it returns true, or at the end of the stream.
 */
export async function readUntil(
  res: Response,
  until: (frames: SseFrame[]) => boolean,
  timeoutMs = 10_000,
): Promise<{ frames: SseFrame[]; ended: boolean }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      const timer = new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), Math.max(0, deadline - Date.now())));
      const next = await Promise.race([reader.read(), timer]);
      if (next === "timeout") throw new Error(`readUntil timed out; got:\n${text}`);
      if (next.done) return { frames: parseSse(text), ended: true };
      text += decoder.decode(next.value, { stream: true });
      const complete = text.slice(0, text.lastIndexOf("\n\n") + 2);
      const frames = parseSse(complete);
      if (until(frames)) return { frames, ended: false };
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

const STATUSES: SubmissionStatus[] = ["queued", "running", "waiting", "terminalizing", "settled"];

/** Everything observable in the store: submissions by status and every known conversation's log. */
export async function snapshot(store: Store): Promise<string> {
  const byStatus: Record<string, unknown> = {};
  const conversations = new Set<string>();
  for (const status of STATUSES) {
    const subs = await store.listByStatus(status);
    subs.sort((a, b) => a.id.localeCompare(b.id));
    byStatus[status] = subs;
    for (const s of subs) conversations.add(s.conversationId);
  }
  const logs: Record<string, unknown> = {};
  for (const id of [...conversations].sort()) logs[id] = await store.readRecords(id, "");
  return JSON.stringify({ byStatus, logs });
}

/** Polls `check` until it returns a value (not undefined) or times out. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error("eventually: timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}
