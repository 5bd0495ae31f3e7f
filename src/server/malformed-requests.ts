/**
 * Requests refused before the app sees them answer like every other error, JSON `{error, code}`:
 * those Node's HTTP parser refuses (a control character in a header, oversized headers), for
 * which Node would write an empty 400, and those the Node adapter cannot turn into a `Request`
 * (a backslash in the path, a bad `Host`), for which it would answer an empty 400 too.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { getRequestListener, RequestError } from "@hono/node-server";

/** Statuses by the parser's error code; anything else is a 400. */
const STATUS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, "Request Header Fields Too Large"],
  ERR_HTTP_REQUEST_TIMEOUT: [408, "Request Timeout"],
  HPE_HEADER_TIMEOUT: [408, "Request Timeout"],
};

const JSON_TYPE = { "content-type": "application/json; charset=UTF-8" };

function errorJson(reason: string, code = "invalid_request"): string {
  return JSON.stringify({ error: `malformed HTTP request: ${reason}`, code });
}

/**
 * A `createServer` for `@hono/node-server`'s `serve`: Node's server over the app's `fetch`, with
 * both refusals above answered as JSON.
 */
export function jsonRefusingServer(fetch: (request: Request) => Response | Promise<Response>, hostname: string) {
  return (options: object): ReturnType<typeof createServer> => {
    const listener = getRequestListener(fetch, {
      hostname,
      // The adapter also hands over what the app itself threw: only a request it could not build
      // is the client's fault; anything else is a 500 that names no internals.
      errorHandler: (err) =>
        err instanceof RequestError
          ? new Response(errorJson(err.message), { status: 400, headers: JSON_TYPE })
          : new Response(JSON.stringify({ error: "internal server error", code: "internal" }), { status: 500, headers: JSON_TYPE }),
    }) as (req: IncomingMessage, res: ServerResponse) => Promise<void>;
    const server = createServer(options, listener);
    server.on("clientError", answerParserRefusal);
    return server;
  };
}

function answerParserRefusal(err: Error & { code?: string }, socket: Duplex): void {
  // Nothing to answer on a connection the client already dropped, nor on one where a response
  // (an SSE stream, say) is already being written: a second status line would corrupt it.
  if (err.code === "ECONNRESET" || !socket.writable || (socket as Duplex & { bytesWritten?: number }).bytesWritten) {
    socket.destroy();
    return;
  }
  const [status, text] = STATUS[err.code ?? ""] ?? [400, "Bad Request"];
  const body = errorJson(err.message.replace(/^Parse Error: /, ""), status === 431 ? "payload_too_large" : "invalid_request");
  socket.end(
    `HTTP/1.1 ${status} ${text}\r\nContent-Type: application/json; charset=UTF-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
