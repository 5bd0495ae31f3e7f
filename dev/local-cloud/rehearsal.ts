/**
 * A short rehearsal of a deployment on the local cloud (`harness rehearse`, `npm run rehearse`,
 * the least-privilege matrix): a smoke conversation through the function URL as a user's first
 * requests would go — a turn that may call a tool, its stream, a delayed message and its cancel,
 * an attachment, the conversation's deletion — then the sweep and the dead-letter drain as the
 * schedule runs them. Each step is a check that passed or failed; any AccessDenied a function met
 * meanwhile fails the rehearsal, naming the function, the action and the resource.
 */
import { randomUUID } from "node:crypto";
import type { LocalCloud } from "./local-cloud.ts";

export interface RehearsalCheck {
  name: string;
  ok: boolean;
  /** Why it failed, or what it saw. */
  detail?: string;
  /** True when the step could not be exercised (e.g. the agent called no tool): not a failure. */
  skipped?: boolean;
}

export interface RehearsalResult {
  ok: boolean;
  checks: RehearsalCheck[];
  /** `<function> may not <action> on <resource>`, one per refused call. */
  denials: string[];
}

export interface RehearsalOptions {
  /** The agent the conversation talks to; default the http function's first agent name. */
  agent?: string;
  /** The first message; default one asking for the time (the basic example's clock tool). */
  message?: string;
  /** Headers of every request (a bearer token when the URL is `NONE` with a token). */
  headers?: Record<string, string>;
  /** Per step; default 60 s. */
  timeoutMs?: number;
}

/** Runs the rehearsal against `cloud`; never throws for a failed step. */
export async function rehearse(cloud: LocalCloud, options: RehearsalOptions = {}): Promise<RehearsalResult> {
  const checks: RehearsalCheck[] = [];
  const deniedBefore = cloud.iam?.denials.length ?? 0;
  const agent = options.agent ?? (cloud.functionEnv("http").HARNESS_AGENT_NAMES ?? "").split(",")[0] ?? "assistant";
  const instance = `rehearsal-${randomUUID().slice(0, 8)}`;
  const base = `${cloud.url}/agents/${agent}/${instance}`;
  const timeoutMs = options.timeoutMs ?? 60_000;
  const headers = { "content-type": "application/json", ...options.headers };
  const step = async (name: string, run: () => Promise<string | { skipped: string } | void>) => {
    try {
      const out = await withTimeout(run(), timeoutMs, name);
      if (out && typeof out === "object") checks.push({ name, ok: true, skipped: true, detail: out.skipped });
      else checks.push({ name, ok: true, ...(out ? { detail: out } : {}) });
    } catch (err) {
      checks.push({ name, ok: false, detail: err instanceof Error ? err.message : String(err) });
    }
  };
  const json = async (res: Response, expected: number[]) => {
    const text = await res.text();
    if (!expected.includes(res.status)) throw new Error(`${res.status} ${text.slice(0, 300)}`);
    return text ? (JSON.parse(text) as Record<string, any>) : {};
  };

  let stream = "";
  let submissionId = "";
  await step("a turn through the function URL, its reply streamed (SSE)", async () => {
    const posted = await json(await fetch(base, { method: "POST", headers, body: JSON.stringify({ kind: "user", body: options.message ?? "what time is it?" }) }), [202]);
    submissionId = String(posted.submissionId);
    stream = await readStreamUntil(base, headers, (text) => text.includes("submission_settled") && text.includes(submissionId), timeoutMs);
    const listed = await json(await fetch(`${base}/submissions`, { headers }), [200]);
    const sub = (listed.submissions as Array<Record<string, any>>).find((s) => s.id === submissionId);
    if (sub?.outcome?.status !== "succeeded") throw new Error(`the turn settled ${JSON.stringify(sub?.outcome ?? sub?.status)}`);
    return `settled succeeded, ${stream.length} bytes streamed`;
  });
  await step("a tool call", async () => {
    if (!submissionId) throw new Error("no turn ran");
    if (!/tool_outcome|tool_call/.test(stream)) return { skipped: "the agent called no tool in its reply" };
    return undefined;
  });
  await step("a delayed message (notBefore), then its cancel", async () => {
    const notBefore = new Date(Date.now() + 3_600_000).toISOString();
    const posted = await json(await fetch(base, { method: "POST", headers, body: JSON.stringify({ kind: "user", body: "later", notBefore }) }), [202]);
    const cancelled = await json(await fetch(`${base}/submissions/${posted.submissionId}/cancel`, { method: "POST", headers, body: "{}" }), [200, 202]);
    return `cancel answered ${cancelled.status}`;
  });
  await step("an attachment upload", async () => {
    const res = await fetch(`${cloud.url}/attachments`, { method: "POST", headers: { ...options.headers, "content-type": "text/plain" }, body: "rehearsal attachment" });
    const ref = await json(res, [200, 201]);
    return `stored ${String(ref.digest ?? ref.ref ?? "").slice(0, 20)}…`;
  });
  await step("the conversation's deletion", async () => {
    const deleted = await json(await fetch(`${base}?cancel=true`, { method: "DELETE", headers }), [200]);
    if (deleted.status !== "deleted") throw new Error(JSON.stringify(deleted));
  });
  await step("the sweep (the sweeper on its schedule)", async () => {
    await cloud.sweep();
  });
  await step("the dead-letter drain (the dlq function on its schedule)", async () => {
    await cloud.drainDeadLetters();
  });

  const denials = (cloud.iam?.denials ?? []).slice(deniedBefore).map((d) => `${d.function} may not ${d.action} on ${d.resource}`);
  const unique = [...new Set(denials)];
  if (cloud.iam) checks.push({ name: "IAM: every call allowed by its function's role", ok: unique.length === 0, ...(unique.length ? { detail: `AccessDenied: ${unique.join("; ")}` } : {}) });
  return { ok: checks.every((c) => c.ok), checks, denials: unique };
}

async function readStreamUntil(url: string, headers: Record<string, string>, done: (text: string) => boolean, timeoutMs: number): Promise<string> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  let text = "";
  try {
    // A stream ends by itself after the stream limit; reconnect until the end is seen.
    while (!done(text)) {
      const res = await fetch(url, { headers: { ...headers, accept: "text/event-stream" }, signal: abort.signal });
      if (res.status !== 200 || !res.body) throw new Error(`stream answered ${res.status}`);
      const decoder = new TextDecoder();
      for await (const chunk of res.body) {
        text += decoder.decode(chunk as Uint8Array, { stream: true });
        if (done(text)) break;
      }
    }
    return text;
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, name: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${name}: no answer within ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer));
}

/** The rehearsal's report, one line a check, then what the template asks that it could not check. */
export function formatRehearsal(result: RehearsalResult, notEmulated: readonly string[]): string {
  const lines = result.checks.map((c) => `${c.skipped ? "-" : c.ok ? "✓" : "✗"} ${c.name}${c.detail ? `: ${c.detail}` : ""}`);
  lines.push("", "Not checked (the template asks it; the local cloud does not emulate it):", ...notEmulated.map((l) => `  - ${l}`));
  lines.push("", result.ok ? "rehearsal passed" : "rehearsal FAILED");
  return lines.join("\n");
}
