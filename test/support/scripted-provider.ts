/**
 * A scripted model provider on the real wire: a local HTTP server that answers pi-ai's
 * `openai-completions` API (Chat Completions, `POST …/chat/completions`, SSE of
 * `chat.completion.chunk`s) and its `anthropic-messages` API (`POST …/v1/messages`, SSE of
 * `message_start … message_stop`), one scripted reply per request, and records every request.
 * The agent reaches it through pi-ai's real provider code (the vendor SDK, its SSE parser, its
 * error mapping), so what a test sees is what a self-hosted or vendor endpoint would produce.
 *
 *   const provider = await startScriptedProvider();
 *   provider.script([{ text: "Hello" }], { status: 429, headers: { "retry-after": "1" } });
 *   const { model, streamFn } = provider.model("openai-completions");
 *   …
 *   provider.requests[1].body.messages   // what the harness sent
 */
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { StreamFn } from "@earendil-works/pi-agent-core";
import { anthropicMessagesApi } from "@earendil-works/pi-ai/api/anthropic-messages.lazy";
import { openAICompletionsApi } from "@earendil-works/pi-ai/api/openai-completions.lazy";
import { createModels, createProvider, type Api, type Model } from "@earendil-works/pi-ai";

/** The wire formats served. */
export type ProviderApi = "openai-completions" | "anthropic-messages";

/** One request as the server received it. */
export interface RecordedRequest {
  api: ProviderApi;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body (`messages`, `tools`, `stream`, …). */
  body: any;
  /** Epoch ms when the request arrived. */
  at: number;
}

/** A piece of a streamed reply, in order. */
export type ProviderBlock =
  | { text: string }
  | { thinking: string }
  /** A tool call; its arguments' JSON is split over several chunks. */
  | { toolCall: { id: string; name: string; arguments: Record<string, unknown> } }
  /** Waits before the next chunk. */
  | { pause: number }
  /** Holds the stream until the promise settles (a test decides when the reply goes on). */
  | { until: Promise<unknown> }
  /** Cuts the connection here, without finishing the stream (a dropped stream). */
  | { drop: true }
  /** An error event inside the stream (Anthropic `event: error`, OpenAI `data: {"error": …}`). */
  | { error: string };

/** A whole reply to one request. */
export type ProviderReply =
  | ProviderBlock[]
  | {
      blocks: ProviderBlock[];
      /** Token counts reported (default: input ≈ body length / 4, output = chunks sent). */
      usage?: { input: number; output: number };
      /** Why the model stopped (default: `toolUse` with a tool call, else `stop`). */
      stop?: "stop" | "length";
    }
  /** An HTTP error answer; `body` defaults to the API's error shape for the status. */
  | { status: number; headers?: Record<string, string>; body?: unknown }
  /** Closes the connection without answering. */
  | { refuse: true };

/** A reply, or one computed from the request (its 0-based index among all requests). */
export type ProviderStep = ProviderReply | ((request: RecordedRequest, index: number) => ProviderReply);

export interface ScriptedProviderOptions {
  /** Characters per text/thinking delta and per tool-argument chunk (default 4). */
  chunkSize?: number;
}

export interface ScriptedProvider {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Every request received, in order (including those answered with an error). */
  readonly requests: RecordedRequest[];
  /** Appends replies for the next requests. A request past the script gets a 500 naming it. */
  script(...steps: ProviderStep[]): void;
  /** Steps not yet used. */
  remaining(): number;
  /**
   * A pi model served here, with a stream function going through pi-ai's own provider code for
   * `api` (the model's `baseUrl` points at this server; the API key is a dummy).
   */
  model(api: ProviderApi, overrides?: Partial<Model<Api>>): { model: Model<Api>; streamFn: StreamFn };
  /**
   * Takes the server off the network (stops listening, cuts open connections): requests now fail
   * with a refused connection, as against a model server still loading its weights.
   */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  /** Stops the server and cuts open connections. */
  close(): Promise<void>;
}

const PROVIDER_ID = "scripted-http";

export async function startScriptedProvider(options: ScriptedProviderOptions = {}): Promise<ScriptedProvider> {
  const chunkSize = options.chunkSize ?? 4;
  const steps: ProviderStep[] = [];
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();

  const server = createServer((req, res) => {
    void answer(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `scripted provider: ${String(err)}` } }));
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = req.url ?? "/";
    const route = path.split("?")[0]!;
    const api: ProviderApi | undefined = route.endsWith("/chat/completions")
      ? "openai-completions"
      : route.endsWith("/messages")
        ? "anthropic-messages"
        : undefined;
    if (req.method !== "POST" || api === undefined) {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: `no route ${req.method} ${path}` } }));
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const request: RecordedRequest = { api, path, headers: req.headers, body: JSON.parse(raw), at: Date.now() };
    const index = requests.push(request) - 1;
    const step = steps.shift();
    const reply: ProviderReply =
      step === undefined
        ? { status: 500, body: errorBody(api, 500, `scripted provider: no reply scripted for request #${index}`) }
        : typeof step === "function"
          ? step(request, index)
          : step;

    if ("refuse" in reply) {
      req.socket.destroy();
      return;
    }
    if ("status" in reply) {
      res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
      res.end(JSON.stringify(reply.body ?? errorBody(api, reply.status, `scripted ${reply.status}`)));
      return;
    }
    const { blocks, usage, stop } = Array.isArray(reply) ? { blocks: reply, usage: undefined, stop: undefined } : reply;
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    const writer = api === "openai-completions" ? new CompletionsWriter(res, String(request.body.model)) : new MessagesWriter(res, String(request.body.model));
    const usageOf = (output: number) => usage ?? { input: Math.ceil(raw.length / 4), output };
    writer.start(usageOf(0));
    let output = 0;
    for (const block of blocks) {
      if ("pause" in block) await new Promise((r) => setTimeout(r, block.pause));
      else if ("until" in block) await block.until.catch(() => undefined);
      else if ("drop" in block) {
        req.socket.destroy();
        return;
      } else if ("error" in block) {
        writer.error(block.error);
        res.end();
        return;
      } else if ("text" in block || "thinking" in block) {
        const thinking = "thinking" in block;
        const pieces = split("thinking" in block ? block.thinking : block.text, chunkSize);
        writer.open(thinking ? "thinking" : "text");
        for (const piece of pieces) writer.delta(thinking ? "thinking" : "text", piece);
        writer.close(thinking ? "thinking" : "text");
        output += pieces.length;
      } else {
        const pieces = split(JSON.stringify(block.toolCall.arguments), chunkSize);
        writer.toolCall(block.toolCall.id, block.toolCall.name, pieces);
        output += pieces.length;
      }
      // Let each block leave as its own TCP write, as a real stream's chunks do.
      await new Promise((r) => setImmediate(r));
    }
    const calledTools = blocks.some((b) => "toolCall" in b);
    writer.finish(stop ?? (calledTools ? "toolUse" : "stop"), usageOf(output));
    res.end();
  }

  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  let listening = true;

  return {
    url,
    requests,
    script: (...more) => void steps.push(...more),
    remaining: () => steps.length,
    model: (api, overrides = {}) => scriptedProviderModel(url, api, overrides),
    async down() {
      if (!listening) return;
      listening = false;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
      // Clients' pools learn of the closed keep-alive connections (else their next request on one
      // fails as "other side closed", not as a refused connection).
      await new Promise((r) => setTimeout(r, 100));
    },
    async up() {
      if (listening) return;
      server.listen(port, "127.0.0.1");
      await once(server, "listening");
      listening = true;
    },
    async close() {
      if (!listening) return;
      listening = false;
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A pi model served by a scripted provider at `url`, with a stream function going through
 * pi-ai's own provider code for `api` (also for processes that did not start the server, such as
 * the local cloud's functions).
 */
export function scriptedProviderModel(url: string, api: ProviderApi, overrides: Partial<Model<Api>> = {}): { model: Model<Api>; streamFn: StreamFn } {
  const model: Model<Api> = {
    id: `scripted-${api}`,
    name: `scripted ${api}`,
    api,
    provider: PROVIDER_ID,
    // The OpenAI SDK appends `/chat/completions`, the Anthropic SDK `/v1/messages`.
    baseUrl: api === "openai-completions" ? `${url}/v1` : url,
    reasoning: false,
    input: ["text"],
    cost: { input: 3, output: 15, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 200_000,
    maxTokens: 8_000,
    ...overrides,
  };
  const models = createModels();
  models.setProvider(
    createProvider({
      id: PROVIDER_ID,
      auth: { apiKey: { name: "scripted key", resolve: async () => ({ auth: { apiKey: "scripted-key" } }) } },
      models: [model],
      api: { "openai-completions": openAICompletionsApi(), "anthropic-messages": anthropicMessagesApi() },
    }),
  );
  const streamFn: StreamFn = (m, context, streamOptions) => models.streamSimple(m, context, streamOptions);
  return { model, streamFn };
}

function split(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces.length > 0 ? pieces : [""];
}

/** The vendor's error body for an HTTP status. */
function errorBody(api: ProviderApi, status: number, message: string): unknown {
  const type =
    status === 400 ? "invalid_request_error"
    : status === 401 ? "authentication_error"
    : status === 403 ? "permission_error"
    : status === 404 ? "not_found_error"
    : status === 429 ? "rate_limit_error"
    : status === 529 ? "overloaded_error"
    : "api_error";
  return api === "anthropic-messages" ? { type: "error", error: { type, message } } : { error: { message, type, code: null } };
}

type Usage = { input: number; output: number };
type TextKind = "text" | "thinking";
type Stop = "stop" | "length" | "toolUse";

/** Writes one reply's SSE in a wire format. */
interface ReplyWriter {
  start(usage: Usage): void;
  open(kind: TextKind): void;
  delta(kind: TextKind, text: string): void;
  close(kind: TextKind): void;
  toolCall(id: string, name: string, argumentPieces: string[]): void;
  error(message: string): void;
  finish(stop: Stop, usage: Usage): void;
}

/** Chat Completions: `data: <chunk>` lines, usage in a last chunk without choices, `data: [DONE]`. */
class CompletionsWriter implements ReplyWriter {
  readonly #res: ServerResponse;
  readonly #model: string;
  readonly #id = `chatcmpl-${Math.random().toString(36).slice(2, 10)}`;
  #toolIndex = 0;
  constructor(res: ServerResponse, model: string) {
    this.#res = res;
    this.#model = model;
  }
  #chunk(delta: Record<string, unknown>, finish: string | null = null): void {
    this.#data({ id: this.#id, object: "chat.completion.chunk", created: 0, model: this.#model, choices: [{ index: 0, delta, finish_reason: finish }] });
  }
  #data(value: unknown): void {
    this.#res.write(`data: ${typeof value === "string" ? value : JSON.stringify(value)}\n\n`);
  }
  start(): void {
    this.#chunk({ role: "assistant", content: "" });
  }
  open(): void {}
  delta(kind: TextKind, text: string): void {
    this.#chunk(kind === "text" ? { content: text } : { reasoning_content: text });
  }
  close(): void {}
  toolCall(id: string, name: string, argumentPieces: string[]): void {
    const index = this.#toolIndex++;
    this.#chunk({ tool_calls: [{ index, id, type: "function", function: { name, arguments: "" } }] });
    for (const piece of argumentPieces) this.#chunk({ tool_calls: [{ index, function: { arguments: piece } }] });
  }
  error(message: string): void {
    this.#data({ error: { message, type: "server_error", code: null } });
  }
  finish(stop: Stop, usage: Usage): void {
    this.#chunk({}, stop === "toolUse" ? "tool_calls" : stop);
    this.#data({
      id: this.#id,
      object: "chat.completion.chunk",
      created: 0,
      model: this.#model,
      choices: [],
      usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output },
    });
    this.#data("[DONE]");
  }
}

/** Anthropic Messages: named events, content blocks by index, usage in message_start/message_delta. */
class MessagesWriter implements ReplyWriter {
  readonly #res: ServerResponse;
  readonly #model: string;
  #index = -1;
  #signatures = 0;
  constructor(res: ServerResponse, model: string) {
    this.#res = res;
    this.#model = model;
  }
  #event(type: string, data: Record<string, unknown>): void {
    this.#res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  }
  start(usage: Usage): void {
    const id = `msg_${Math.random().toString(36).slice(2, 10)}`;
    this.#event("message_start", {
      message: { id, type: "message", role: "assistant", model: this.#model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: usage.input, output_tokens: 1 } },
    });
  }
  open(kind: TextKind): void {
    this.#index++;
    this.#event("content_block_start", { index: this.#index, content_block: kind === "text" ? { type: "text", text: "" } : { type: "thinking", thinking: "", signature: "" } });
  }
  delta(kind: TextKind, text: string): void {
    this.#event("content_block_delta", { index: this.#index, delta: kind === "text" ? { type: "text_delta", text } : { type: "thinking_delta", thinking: text } });
  }
  close(kind: TextKind): void {
    if (kind === "thinking") this.#event("content_block_delta", { index: this.#index, delta: { type: "signature_delta", signature: `sig-${++this.#signatures}` } });
    this.#event("content_block_stop", { index: this.#index });
  }
  toolCall(id: string, name: string, argumentPieces: string[]): void {
    this.#index++;
    this.#event("content_block_start", { index: this.#index, content_block: { type: "tool_use", id, name, input: {} } });
    for (const piece of argumentPieces) this.#event("content_block_delta", { index: this.#index, delta: { type: "input_json_delta", partial_json: piece } });
    this.#event("content_block_stop", { index: this.#index });
  }
  error(message: string): void {
    this.#event("error", { error: { type: "overloaded_error", message } });
  }
  finish(stop: Stop, usage: Usage): void {
    const reason = stop === "toolUse" ? "tool_use" : stop === "length" ? "max_tokens" : "end_turn";
    this.#event("message_delta", { delta: { stop_reason: reason, stop_sequence: null }, usage: { output_tokens: usage.output } });
    this.#event("message_stop", {});
  }
}
