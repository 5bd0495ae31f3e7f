/**
 * A pass-through HTTP proxy in front of DynamoDB Local that can answer a share of requests with
 * DynamoDB's real throttling error (HTTP 400, `ThrottlingException`), before they reach the
 * table: the functions' SDK clients see exactly what a throttled table sends them.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface ThrottleProxy {
  url: string;
  /** Throttle every n-th request (0: none). */
  throttleEvery: number;
  /** Requests answered with a throttle so far. */
  throttled: number;
  /** Requests forwarded so far. */
  forwarded: number;
  close(): Promise<void>;
}

export async function startThrottleProxy(target: string): Promise<ThrottleProxy> {
  const upstream = new URL(target);
  let seen = 0;
  const proxy: ThrottleProxy = {
    url: "",
    throttleEvery: 0,
    throttled: 0,
    forwarded: 0,
    close: () => new Promise((r) => server.close(() => r())),
  };
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => {
      seen++;
      if (proxy.throttleEvery > 0 && seen % proxy.throttleEvery === 0) {
        proxy.throttled++;
        res.writeHead(400, { "content-type": "application/x-amz-json-1.0", "x-amzn-requestid": `throttle-${seen}` });
        res.end(
          JSON.stringify({
            __type: "com.amazonaws.dynamodb.v20120810#ThrottlingException",
            message: "Rate of requests exceeds the allowed throughput.",
          }),
        );
        return;
      }
      proxy.forwarded++;
      const forward = http.request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      forward.on("error", () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
      forward.end(Buffer.concat(parts));
    });
  });
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = proxy.close;
  proxy.close = async () => {
    server.closeAllConnections();
    await close();
  };
  return proxy;
}
