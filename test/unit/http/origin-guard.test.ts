/**
 * Origin safety and CORS, with requests exactly as browsers send them (headers of Chromium 1xx;
 * raw HTTP so nothing is added or normalised): a page on another origin gets nothing run and
 * nothing stored, a page re-pointed at 127.0.0.1 (DNS rebinding) neither, and curl or a server
 * (no Origin) works as before. With `cors`, the listed origins get preflights answered and
 * readable responses.
 */
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseCorsOrigins } from "../../../src/http/cors-origins.ts";
import { appFor, snapshot, startTestServer, startRuntime, type TestServer } from "../../support/test-server.ts";

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP/1.1 exchange with exactly these headers (Host included). */
function raw(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path, headers, setHost: false }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
        // An SSE stream stays open: its headers and first bytes are enough here.
        if (res.headers["content-type"]?.startsWith("text/event-stream")) res.destroy();
      });
      const done = () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text });
      res.on("end", done);
      res.on("close", done);
    });
    req.on("error", reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

const CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

/** `fetch(url, {method: "POST", body: string})` from a page of `origin`: a CORS "simple" request. */
function simplePost(host: string, origin: string, body: string): Record<string, string> {
  return {
    Host: host,
    Connection: "keep-alive",
    "Content-Length": String(Buffer.byteLength(body)),
    "sec-ch-ua-platform": '"Linux"',
    "User-Agent": CHROME,
    "Content-Type": "text/plain;charset=UTF-8",
    Accept: "*/*",
    Origin: origin,
    "Sec-Fetch-Site": "cross-site",
    "Sec-Fetch-Mode": "cors",
    "Sec-Fetch-Dest": "empty",
    Referer: `${origin}/`,
    "Accept-Encoding": "gzip, deflate, br, zstd",
    "Accept-Language": "en-US,en;q=0.9",
  };
}

/** `<form method=post enctype=text/plain>` submitted on a page of `origin`: a navigation. */
function formPost(host: string, origin: string, body: string): Record<string, string> {
  return {
    Host: host,
    Connection: "keep-alive",
    "Content-Length": String(Buffer.byteLength(body)),
    "Cache-Control": "max-age=0",
    Origin: origin,
    "Content-Type": "text/plain",
    "Upgrade-Insecure-Requests": "1",
    "User-Agent": CHROME,
    Accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    "Sec-Fetch-Site": "cross-site",
    "Sec-Fetch-Mode": "navigate",
    "Sec-Fetch-Dest": "document",
    Referer: `${origin}/`,
  };
}

/** The preflight before `fetch(url, {method, headers: {"content-type": "application/json", authorization}})`. */
function preflight(host: string, origin: string, method = "POST"): Record<string, string> {
  return {
    Host: host,
    Connection: "keep-alive",
    Accept: "*/*",
    "Access-Control-Request-Method": method,
    "Access-Control-Request-Headers": "authorization,content-type",
    Origin: origin,
    "User-Agent": CHROME,
    "Sec-Fetch-Mode": "cors",
    "Sec-Fetch-Site": "cross-site",
    "Sec-Fetch-Dest": "empty",
    Referer: `${origin}/`,
  };
}

/** `new EventSource(url)` on a page of `origin` (a same-origin one sends no Origin). */
function eventSource(host: string, origin?: string): Record<string, string> {
  return {
    Host: host,
    Connection: "keep-alive",
    Accept: "text/event-stream",
    "Cache-Control": "no-cache",
    ...(origin ? { Origin: origin, "Sec-Fetch-Site": "cross-site", Referer: `${origin}/` } : { "Sec-Fetch-Site": "same-origin" }),
    "User-Agent": CHROME,
    "Sec-Fetch-Mode": "cors",
    "Sec-Fetch-Dest": "empty",
  };
}

const message = JSON.stringify({ kind: "user", body: "run my bash tool" });
const json = (r: RawResponse) => JSON.parse(r.body) as { error: string; code: string };
let seq = 0;
const fresh = () => `o-${++seq}`;

describe("origin safety, CORS off (the default), server bound to 127.0.0.1", () => {
  let h: TestServer;
  let host: string;
  beforeAll(async () => {
    h = await startTestServer();
    host = `127.0.0.1:${h.server.port}`;
  });
  afterAll(async () => {
    await h?.close();
  });

  it("refuses a text/plain simple POST and a form POST from another origin with 403 JSON, storing nothing", async () => {
    const before = await snapshot(h.store);
    for (const headers of [simplePost(host, "https://evil.example", message), formPost(host, "https://evil.example", message)]) {
      for (const path of [`/agents/assistant/${fresh()}`, `/agents/assistant/${fresh()}?wait=true`, `/agents/assistant/x/steer`]) {
        const res = await raw(h.server.port, "POST", path, headers, message);
        expect(res.status, path).toBe(403);
        expect(res.headers["content-type"]).toMatch(/^application\/json/);
        expect(json(res)).toEqual({ error: 'origin "https://evil.example" is not allowed', code: "origin_not_allowed" });
        expect(res.headers["access-control-allow-origin"]).toBeUndefined();
      }
    }
    expect(await snapshot(h.store)).toBe(before);
  });

  it("refuses another origin's preflight and EventSource; a page served on 127.0.0.1 itself, curl and servers pass", async () => {
    const pre = await raw(h.server.port, "OPTIONS", "/agents/assistant/x", preflight(host, "http://localhost:3000"));
    expect(pre.status).toBe(403);
    expect(pre.headers["access-control-allow-origin"]).toBeUndefined();
    const es = await raw(h.server.port, "GET", "/agents/assistant/x", eventSource(host, "http://localhost:3000"));
    expect(es.status).toBe(403);
    expect(json(es).code).toBe("origin_not_allowed");
    // The "null" origin of sandboxed frames and file:// pages is another origin too.
    expect((await raw(h.server.port, "POST", `/agents/assistant/${fresh()}`, simplePost(host, "null", message), message)).status).toBe(403);

    const same = await raw(h.server.port, "POST", `/agents/assistant/${fresh()}`, simplePost(host, `http://${host}`, message), message);
    expect(same.status).toBe(202);
    const curl = { Host: host, "User-Agent": "curl/8.5.0", Accept: "*/*", "Content-Type": "application/x-www-form-urlencoded", "Content-Length": String(message.length) };
    const i = fresh();
    const admitted = await raw(h.server.port, "POST", `/agents/assistant/${i}`, curl, message);
    expect(admitted.status).toBe(202);
    await h.runtime.wait((JSON.parse(admitted.body) as { submissionId: string }).submissionId);
    const server = await fetch(`${h.url}/agents/assistant/${i}?wait=true`, { method: "POST", body: message });
    expect(server.status).toBe(200);
  });

  it("refuses a Host that is not loopback (DNS rebinding), even same-origin and without Origin; loopback names pass", async () => {
    const before = await snapshot(h.store);
    const rebound = `attacker.example:${h.server.port}`;
    const post = await raw(h.server.port, "POST", `/agents/assistant/${fresh()}`, simplePost(rebound, `http://${rebound}`, message), message);
    expect(post.status).toBe(403);
    expect(json(post)).toEqual({ error: `host "${rebound}" is not allowed`, code: "host_not_allowed" });
    const get = await raw(h.server.port, "GET", "/agents/assistant/x", eventSource(rebound));
    expect(get.status).toBe(403);
    expect((await raw(h.server.port, "GET", "/healthz", { Host: rebound })).status).toBe(403);
    expect((await raw(h.server.port, "GET", "/healthz", { Host: "192.168.1.10" })).status).toBe(403);
    expect(await snapshot(h.store)).toBe(before);

    for (const name of ["localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "[::1]"]) {
      const res = await raw(h.server.port, "GET", "/healthz", { Host: `${name}:${h.server.port}` });
      expect(res.status, name).toBe(200);
    }
    expect((await raw(h.server.port, "GET", "/healthz", { Host: "localhost" })).status).toBe(200);
  });
});

describe("CORS on (cors.origins)", () => {
  const allowed = "http://localhost:5173";
  let h: TestServer;
  let host: string;
  beforeAll(async () => {
    h = await startTestServer({ cors: { origins: [allowed] } });
    host = `127.0.0.1:${h.server.port}`;
  });
  afterAll(async () => {
    await h?.close();
  });

  it("answers the preflight of every /agents route, /mcp and /healthz for an allowed origin", async () => {
    const routes: Array<[string, string]> = [
      ["POST", "/agents/assistant/x"],
      ["POST", "/agents/assistant/x?wait=true"],
      ["POST", "/agents/assistant/x/steer"],
      ["POST", "/agents/assistant/x/followup"],
      ["GET", "/agents/assistant/x?session=s"],
      ["GET", "/healthz"],
      ["POST", "/mcp"],
    ];
    for (const [method, path] of routes) {
      const res = await raw(h.server.port, "OPTIONS", path, preflight(host, allowed, method));
      expect(res.status, path).toBe(204);
      expect(res.headers["access-control-allow-origin"], path).toBe(allowed);
      expect(String(res.headers["access-control-allow-methods"]).split(",")).toContain(method);
      expect(String(res.headers["access-control-allow-headers"]).toLowerCase().split(",")).toEqual(
        expect.arrayContaining(["content-type", "authorization", "last-event-id", "mcp-protocol-version"]),
      );
      expect(res.headers.vary).toMatch(/Origin/);
    }
    const other = await raw(h.server.port, "OPTIONS", "/agents/assistant/x", preflight(host, "https://evil.example"));
    expect(other.status).toBe(403);
  });

  it("lets the allowed origin dispatch, read errors and stream; another origin still gets 403", async () => {
    const i = fresh();
    const ok = await raw(h.server.port, "POST", `/agents/assistant/${i}?wait=true`, simplePost(host, allowed, message), message);
    expect(ok.status).toBe(200);
    expect(ok.headers["access-control-allow-origin"]).toBe(allowed);
    const bad = await raw(h.server.port, "POST", `/agents/assistant/${i}`, simplePost(host, allowed, "{nope"), "{nope");
    expect(bad.status).toBe(400);
    expect(bad.headers["access-control-allow-origin"], "the page can read why").toBe(allowed);
    const unknown = await raw(h.server.port, "POST", `/agents/nobody/${i}`, simplePost(host, allowed, message), message);
    expect(unknown.status).toBe(404);
    expect(unknown.headers["access-control-allow-origin"]).toBe(allowed);
    const es = await raw(h.server.port, "GET", `/agents/assistant/${i}`, eventSource(host, allowed));
    expect(es.status).toBe(200);
    expect(es.headers["access-control-allow-origin"]).toBe(allowed);
    expect(es.body).toMatch(/^: connected/);

    const before = await snapshot(h.store);
    const evil = await raw(h.server.port, "POST", `/agents/assistant/${fresh()}`, simplePost(host, "https://evil.example", message), message);
    expect(evil.status).toBe(403);
    expect(await snapshot(h.store)).toBe(before);
  });
});

describe("the app alone", () => {
  it("answers any Host unless allowedHosts is set (a server bound to every interface, Lambda)", async () => {
    const { runtime } = await startRuntime();
    try {
      const open = appFor(runtime);
      expect((await open.request("http://harness.internal/healthz")).status).toBe(200);
      const guarded = appFor(runtime, { allowedHosts: ["harness.internal"] });
      expect((await guarded.request("/healthz", { headers: { Host: "harness.internal:8080" } })).status).toBe(200);
      expect((await guarded.request("/healthz", { headers: { Host: "other.example" } })).status).toBe(403);
      const star = appFor(runtime, { cors: { origins: ["*"] } });
      const res = await star.request("/healthz", { headers: { Origin: "https://anywhere.example" } });
      expect(res.status).toBe(200);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
    } finally {
      await runtime.close();
    }
  });

  it("parses CORS_ORIGINS: comma-separated origins, refusing an entry that is not one", () => {
    expect(parseCorsOrigins(undefined)).toEqual([]);
    expect(parseCorsOrigins(" http://localhost:5173 , https://app.example.com,")).toEqual(["http://localhost:5173", "https://app.example.com"]);
    expect(parseCorsOrigins("*")).toEqual(["*"]);
    expect(() => parseCorsOrigins("https://app.example.com/")).toThrow(/CORS_ORIGINS: "https:\/\/app.example.com\/" is not an origin/);
    expect(() => parseCorsOrigins("app.example.com", "HARNESS_CORS_ORIGINS")).toThrow(/HARNESS_CORS_ORIGINS/);
  });
});
