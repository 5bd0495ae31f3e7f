/**
 * A client that follows a conversation's SSE stream the way a browser EventSource does: it
 * reconnects with Last-Event-ID whenever a stream ends (the http function ends each one after
 * HARNESS_STREAM_MAX_MS, or when the session is idle) and stops on 204 once told to finish.
 */
export interface SseEvent {
  id: string;
  event: string;
  data: string;
}

export interface SseFollower {
  readonly events: SseEvent[];
  /** Responses opened (reconnects + 1). */
  readonly connections: number;
  /** Keeps following until the stream answers 204 (idle and caught up), then resolves. */
  finish(): Promise<SseEvent[]>;
}

export function followSse(url: string, options: { timeoutMs?: number } = {}): SseFollower {
  const events: SseEvent[] = [];
  let connections = 0;
  let finishing = false;
  const deadline = Date.now() + (options.timeoutMs ?? 120_000);
  const loop = (async () => {
    let lastId = "";
    while (Date.now() < deadline) {
      let res: Response;
      try {
        res = await fetch(url, { headers: lastId ? { "Last-Event-ID": lastId } : {} });
      } catch {
        await sleep(200);
        continue;
      }
      if (res.status === 204) {
        if (finishing) return;
        await sleep(200);
        continue;
      }
      if (res.status !== 200 || !res.body) {
        await res.body?.cancel();
        await sleep(200);
        continue;
      }
      connections++;
      try {
        for await (const event of parseSse(res.body)) {
          events.push(event);
          lastId = event.id;
        }
      } catch {
        // cut mid-stream (a killed container): reconnect like EventSource
      }
    }
    throw new Error(`SSE follower of ${url} timed out`);
  })();
  loop.catch(() => {});
  return {
    events,
    get connections() {
      return connections;
    },
    async finish() {
      finishing = true;
      await loop;
      return events;
    },
  };
}

async function* parseSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n")) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const fields: Record<string, string> = {};
      for (const line of block.split("\n")) {
        if (line.startsWith(":") || line === "") continue;
        const at = line.indexOf(":");
        const name = at === -1 ? line : line.slice(0, at);
        const value = at === -1 ? "" : line.slice(at + 1).replace(/^ /, "");
        fields[name] = fields[name] === undefined ? value : `${fields[name]}\n${value}`;
      }
      if (fields.id !== undefined && fields.data !== undefined) {
        yield { id: fields.id, event: fields.event ?? "message", data: fields.data };
      }
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
