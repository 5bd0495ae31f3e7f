/**
 * Tells a tool call over streamable HTTP that its server went away. The server answers a
 * `tools/call` POST with an SSE stream and writes the result on it later; when the server dies
 * in between, the stream breaks, and the SDK (1.32) reports the break to `onerror` but leaves
 * the request pending for good (it resumes only a stream that carried event ids). This fetch
 * watches the body of each POST that carries calls (named by their harness call id in `_meta`)
 * and, when it breaks, hands those call ids to `onLost` so the calls end with an error result.
 */

/** The `_meta` key a call's harness call id rides under (servers may read it too). */
export const CALL_ID_META = "resolute-harness/callId";

type Fetch = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** `fetch`, with the bodies of POSTs that carry calls watched for a break. */
export function watchingFetch(onLost: (callIds: string[], error: unknown) => void, base: Fetch = fetch): Fetch {
  return async (url, init) => {
    const response = await base(url, init);
    if (init?.method !== "POST" || response.body === null) return response;
    const callIds = callIdsOf(init.body);
    if (callIds.length === 0) return response;
    const reader = response.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        } catch (err) {
          onLost(callIds, err);
          controller.error(err);
        }
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/** The harness call ids of the `tools/call` requests in a POST body (one message or a batch). */
function callIdsOf(body: unknown): string[] {
  if (typeof body !== "string" || !body.includes(CALL_ID_META)) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [];
  }
  const ids: string[] = [];
  for (const message of Array.isArray(parsed) ? parsed : [parsed]) {
    const id = (message as { params?: { _meta?: Record<string, unknown> } } | null)?.params?._meta?.[CALL_ID_META];
    if (typeof id === "string") ids.push(id);
  }
  return ids;
}
