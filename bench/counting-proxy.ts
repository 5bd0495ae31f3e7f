/**
 * A pass-through HTTP proxy that counts the requests it forwards by a key (an SQS action from
 * `X-Amz-Target`, an S3 method), for the cost benchmark: point an endpoint variable
 * (`AWS_ENDPOINT_URL_SQS`, `AWS_ENDPOINT_URL_S3`) at it and every request made through it is
 * counted, whoever makes it (a function, or the local event source that polls for one).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface CountingProxy {
  url: string;
  /** Requests by key since the last reset. */
  readonly counts: Map<string, number>;
  total(): number;
  reset(): void;
  close(): Promise<void>;
}

/** The SQS action of a JSON-protocol request (`AmazonSQS.SendMessage` → `SendMessage`). */
export const sqsAction = (req: http.IncomingMessage): string => String(req.headers["x-amz-target"] ?? "").split(".").pop() || req.method || "?";

/** An S3 request's kind: its method, and whether it names an object (a key after the bucket). */
export const s3Request = (req: http.IncomingMessage): string => `${req.method} ${/^\/[^/?]+\/[^?]/.test(req.url ?? "") ? "object" : "bucket"}`;

export async function startCountingProxy(target: string, keyOf: (req: http.IncomingMessage) => string): Promise<CountingProxy> {
  const upstream = new URL(target);
  const counts = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const key = keyOf(req);
    const forward = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (up) => {
        counts.set(key, (counts.get(key) ?? 0) + 1);
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    forward.on("error", () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(forward);
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    counts,
    total: () => [...counts.values()].reduce((a, b) => a + b, 0),
    reset: () => counts.clear(),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
