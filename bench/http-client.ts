/**
 * A lean HTTP load client for the benchmarks (node:http, keep-alive sockets, no dependencies):
 * JSON POSTs and an SSE reader that stops at the frame the caller is waiting for. It shares the
 * machine with the server under test, so it does as little work per request as it can.
 */
import { Agent, request, type IncomingMessage } from "node:http";

export interface HttpAnswer {
  status: number;
  body: string;
}

/** One SSE frame as received; `at` is `performance.now()` when its chunk arrived. */
export interface SseFrame {
  event: string;
  data: string;
  id: string;
  at: number;
}

export class BenchClient {
  readonly #host: string;
  readonly #port: number;
  readonly #agent: Agent;

  constructor(baseUrl: string) {
    const url = new URL(baseUrl);
    if (url.hostname !== "127.0.0.1") throw new Error(`bench client: loopback only, got ${url.hostname}`);
    this.#host = url.hostname;
    this.#port = Number(url.port);
    this.#agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  }

  /** POSTs `body` as JSON and reads the whole answer. */
  post(path: string, body: unknown): Promise<HttpAnswer> {
    const payload = JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: this.#host,
          port: this.#port,
          path,
          method: "POST",
          agent: this.#agent,
          headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload) },
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => (text += chunk));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(payload);
    });
  }

  /**
   * GETs an SSE stream and hands every frame to `onFrame` until it returns true (then the
   * connection is dropped, as a client that got what it waited for does) or the stream ends.
   * Resolves with the status, and `headersAt` (`performance.now()` when the headers arrived).
   */
  stream(path: string, onFrame: (frame: SseFrame) => boolean): Promise<{ status: number; headersAt: number; done: boolean }> {
    return new Promise((resolve, reject) => {
      const req = request(
        { host: this.#host, port: this.#port, path, method: "GET", agent: this.#agent, headers: { accept: "text/event-stream" } },
        (res: IncomingMessage) => {
          const headersAt = performance.now();
          const status = res.statusCode ?? 0;
          let buffer = "";
          let finished = false;
          const finish = (done: boolean) => {
            if (finished) return;
            finished = true;
            resolve({ status, headersAt, done });
          };
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            if (finished) return;
            const at = performance.now();
            buffer += chunk;
            let end: number;
            while ((end = buffer.indexOf("\n\n")) >= 0) {
              const block = buffer.slice(0, end);
              buffer = buffer.slice(end + 2);
              const frame = parseFrame(block, at);
              if (frame && onFrame(frame)) {
                finish(true);
                req.destroy();
                return;
              }
            }
          });
          res.on("end", () => finish(false));
          res.on("error", (err) => (finished ? undefined : reject(err)));
          res.on("close", () => finish(false));
        },
      );
      req.on("error", (err) => reject(err));
      req.end();
    });
  }

  close(): void {
    this.#agent.destroy();
  }
}

function parseFrame(block: string, at: number): SseFrame | undefined {
  let event = "message";
  let data = "";
  let id = "";
  let any = false;
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(line[colon + 1] === " " ? colon + 2 : colon + 1);
    if (field === "event") event = value;
    else if (field === "data") data = data === "" ? value : `${data}\n${value}`;
    else if (field === "id") id = value;
    else continue;
    any = true;
  }
  return any ? { event, data, id, at } : undefined;
}

/** Runs `worker(i)` for i = 0..count-1 with at most `concurrency` in flight; returns the wall ms. */
export async function runConcurrently(count: number, concurrency: number, worker: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  const lane = async () => {
    for (;;) {
      const i = next++;
      if (i >= count) return;
      await worker(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  return performance.now() - t0;
}
