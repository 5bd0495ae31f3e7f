/**
 * A scripted Gemini on the real wire: a local HTTP server answering pi-ai's
 * `google-generative-ai` API (`POST …/models/<model>:streamGenerateContent?alt=sse`, SSE of
 * `GenerateContentResponse` chunks), one scripted reply per request, every request recorded. Like
 * Gemini 3 it refuses (HTTP 400, INVALID_ARGUMENT) a request whose history holds a model
 * `functionCall` part without the `thoughtSignature` it was sent with.
 */
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { StreamFn } from "@earendil-works/pi-agent-core";
import { googleGenerativeAIApi } from "@earendil-works/pi-ai/api/google-generative-ai.lazy";
import { createModels, createProvider, type Api, type Model } from "@earendil-works/pi-ai";

/** One part of a scripted reply. */
export type GeminiPart =
  | { text: string }
  | { functionCall: { id: string; name: string; args: Record<string, unknown> }; thoughtSignature?: string };

export interface ScriptedGemini {
  readonly url: string;
  /** Every request body received, in order (the refused ones too). */
  readonly requests: any[];
  /** Replies for the next requests, one each. */
  script(...replies: GeminiPart[][]): void;
  /** A pi model served here through pi-ai's own Google provider code. */
  model(): { model: Model<Api>; streamFn: StreamFn };
  close(): Promise<void>;
}

/** The 400 Gemini answers for a replayed function call that lost its signature. */
export const MISSING_SIGNATURE = "Function call is missing a thought_signature in functionCall parts";

const PROVIDER_ID = "scripted-gemini";
const MODEL_ID = "gemini-3-pro-preview";

export async function startScriptedGemini(): Promise<ScriptedGemini> {
  const replies: GeminiPart[][] = [];
  const requests: any[] = [];
  const sockets = new Set<Socket>();
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== "POST" || !req.url?.includes(":streamGenerateContent")) {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { code: 404, message: `no route ${req.url}`, status: "NOT_FOUND" } }));
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    requests.push(body);
    const unsigned = (body.contents as { role: string; parts: { functionCall?: { name: string }; thoughtSignature?: string }[] }[])
      .flatMap((c, position) => (c.role === "model" ? c.parts.filter((p) => p.functionCall && !p.thoughtSignature).map((p) => ({ p, position })) : []));
    if (unsigned.length > 0) {
      const { p, position } = unsigned[0]!;
      const message = `${MISSING_SIGNATURE}. Function name: ${p.functionCall!.name}, position: ${position}.`;
      res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: { code: 400, message, status: "INVALID_ARGUMENT" } }));
      return;
    }
    const parts = replies.shift();
    if (!parts) {
      res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: { code: 500, message: "no reply scripted", status: "INTERNAL" } }));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    parts.forEach((part, i) => {
      const last = i === parts.length - 1;
      const chunk = {
        candidates: [{ content: { role: "model", parts: [part] }, index: 0, ...(last ? { finishReason: "STOP" } : {}) }],
        ...(last ? { usageMetadata: { promptTokenCount: 40, candidatesTokenCount: 10 + i, totalTokenCount: 50 + i } } : {}),
        modelVersion: MODEL_ID,
      };
      res.write(`data: ${JSON.stringify(chunk)}\r\n\r\n`);
    });
    res.end();
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    script: (...more) => void replies.push(...more),
    model() {
      const model: Model<Api> = {
        id: MODEL_ID,
        name: "scripted Gemini 3",
        api: "google-generative-ai",
        provider: PROVIDER_ID,
        baseUrl: `${url}/v1beta`,
        reasoning: false,
        input: ["text"],
        cost: { input: 2, output: 12, cacheRead: 0, cacheWrite: 0 },
        contextWindow: 1_000_000,
        maxTokens: 8_000,
      };
      const models = createModels();
      models.setProvider(
        createProvider({
          id: PROVIDER_ID,
          auth: { apiKey: { name: "scripted key", resolve: async () => ({ auth: { apiKey: "scripted-key" } }) } },
          models: [model],
          api: { "google-generative-ai": googleGenerativeAIApi() },
        }),
      );
      return { model, streamFn: (m, context, options) => models.streamSimple(m, context, options) };
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
