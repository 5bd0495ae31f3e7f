/**
 * A pass-through proxy in front of DynamoDB Local that meters what one function's requests
 * cost: point that function's `AWS_ENDPOINT_URL_DYNAMODB` at it (the local cloud's `functionEnv`)
 * and every request it makes is counted by operation, with the read and write units DynamoDB
 * would charge. It asks Local for them (`ReturnConsumedCapacity: TOTAL` added to each request
 * that does not ask; Local checks no signature) and applies DynamoDB's per-request minimum
 * of a read (1 unit strongly consistent, 0.5 eventually), which Local does not charge for a
 * Query that finds nothing. Write units of multi-item transactions are as Local reports them
 * (it under-counts equal-sized items: notes/verified.md §3); this meter is for reads.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

/** What the metered requests of one operation cost. */
export interface OperationMeter {
  requests: number;
  readUnits: number;
  writeUnits: number;
}

export interface DynamoMeterProxy {
  url: string;
  /** By operation (`Query`, `GetItem`, …), since the last reset. */
  readonly byOperation: Map<string, OperationMeter>;
  /** Totals since the last reset. */
  totals(): OperationMeter;
  /** Starts keeping every request with its time (`performance.now()` as its answer arrived). */
  startLog(): void;
  /** Stops keeping requests and returns those kept. */
  stopLog(): MeteredRequest[];
  reset(): void;
  close(): Promise<void>;
}

/** One metered request. */
export interface MeteredRequest {
  at: number;
  op: string;
  readUnits: number;
  writeUnits: number;
}

const READS = new Set(["GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"]);
const WITH_CAPACITY = new Set([...READS, "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"]);

export async function startDynamoMeterProxy(target: string): Promise<DynamoMeterProxy> {
  const upstream = new URL(target);
  const byOperation = new Map<string, OperationMeter>();
  let log: MeteredRequest[] | undefined;
  const count = (op: string, read: number, write: number) => {
    log?.push({ at: performance.now(), op, readUnits: read, writeUnits: write });
    const m = byOperation.get(op) ?? { requests: 0, readUnits: 0, writeUnits: 0 };
    m.requests++;
    m.readUnits += read;
    m.writeUnits += write;
    byOperation.set(op, m);
  };
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => {
      const op = String(req.headers["x-amz-target"] ?? "").split(".").pop() ?? "";
      let body = Buffer.concat(parts);
      let consistent = false;
      if (WITH_CAPACITY.has(op)) {
        try {
          const input = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
          consistent = input.ConsistentRead === true;
          if (input.ReturnConsumedCapacity === undefined) {
            input.ReturnConsumedCapacity = "TOTAL";
            body = Buffer.from(JSON.stringify(input));
          }
        } catch {
          // not JSON: forwarded as is
        }
      }
      const headers = { ...req.headers, "content-length": String(body.length) };
      const forward = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers }, (up) => {
        const answer: Buffer[] = [];
        up.on("data", (c: Buffer) => answer.push(c));
        up.on("end", () => {
          const text = Buffer.concat(answer);
          if (op !== "") {
            let read = 0;
            let write = 0;
            try {
              const out = JSON.parse(text.toString("utf8")) as { ConsumedCapacity?: { CapacityUnits?: number } | { CapacityUnits?: number }[] };
              const cc = out.ConsumedCapacity;
              const units = (Array.isArray(cc) ? cc : cc ? [cc] : []).reduce((n, c) => n + (c.CapacityUnits ?? 0), 0);
              if (READS.has(op)) read = Math.max(units, consistent ? 1 : 0.5);
              else write = units;
            } catch {
              // an error answer: counted as a request
            }
            count(op, read, write);
          }
          res.writeHead(up.statusCode ?? 502, up.headers);
          res.end(text);
        });
      });
      forward.on("error", () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
      forward.end(body);
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    byOperation,
    totals: () => {
      const t = { requests: 0, readUnits: 0, writeUnits: 0 };
      for (const m of byOperation.values()) {
        t.requests += m.requests;
        t.readUnits += m.readUnits;
        t.writeUnits += m.writeUnits;
      }
      return t;
    },
    reset: () => byOperation.clear(),
    startLog: () => {
      log = [];
    },
    stopLog: () => {
      const kept = log ?? [];
      log = undefined;
      return kept;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
