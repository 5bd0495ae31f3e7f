// A submission's timeline, built from what the log and the row already record (ADR 0054): its
// attempts, model calls, tool calls, waits, children, compactions and settlement as spans in
// time. Pure: the page draws what `buildTimeline` returns, and a unit test reads it too.

const ms = (iso) => Date.parse(iso);

/** Tokens and cost of a completed assistant message (pi-ai's usage), when it reports them. */
function usageOf(record) {
  const usage = record.payload?.message?.body?.usage;
  if (!usage || typeof usage !== "object") return undefined;
  const cost = typeof usage.cost === "object" ? usage.cost?.total : undefined;
  return { input: usage.input ?? 0, output: usage.output ?? 0, cost: typeof cost === "number" ? cost : undefined };
}

const WAIT_KINDS = { approval_requested: "a person's approval", callback_started: "a callback", task_spawned: "a child" };

/** Why an attempt ended, from what came after it (and what it last wrote: a park to wait). */
function attemptEnd(index, attempts, detail, own) {
  if (index < attempts.length - 1) {
    const waits = own.filter((r) => WAIT_KINDS[r.kind]).map((r) => `${WAIT_KINDS[r.kind]} (${r.payload.toolName ?? r.payload.agent})`);
    if (waits.length > 0) return `parked to wait for ${[...new Set(waits)].join(", ")}; attempt ${index + 2} resumed it`;
    const reason = detail.lastError ? `crashed or lost its lease (${detail.lastError})` : "crashed or lost its lease";
    return `ended without settling: ${reason}; attempt ${index + 2} took over`;
  }
  if (detail.status !== "settled") return detail.status === "waiting" ? "parked (waiting)" : "running";
  const outcome = detail.outcome ?? {};
  if (outcome.errorCode === "cancelled" || outcome.errorCode === "cancelled_by_parent") return `cancelled: ${outcome.error ?? ""}`;
  return outcome.status === "succeeded" ? "settled: succeeded" : `settled: failed (${outcome.errorCode ?? "error"}) ${outcome.error ?? ""}`;
}

/**
 * The spans of submission `detail` (the API's SubmissionDetail) drawn from `records` (its
 * session's log, any order of submissions), with `now` closing what is still open.
 * @returns {{start: number, end: number, spans: {lane: string, kind: string, label: string, start: number, end: number, detail?: string, attempt?: number}[], usage: {input: number, output: number, cost?: number}}}
 */
export function buildTimeline(detail, records, now = Date.now()) {
  const mine = records.filter((r) => r.submissionId === detail.id);
  const start = detail.createdAt;
  const settledAt = detail.status === "settled" ? detail.updatedAt : undefined;
  const lastRecord = mine.length > 0 ? ms(mine[mine.length - 1].time) : start;
  const end = Math.max(settledAt ?? now, lastRecord, start + 1);
  const spans = [];
  const attempts = detail.attempts ?? [];
  const attemptNo = new Map(attempts.map((a, i) => [a.id, i + 1]));

  attempts.forEach((a, i) => {
    const own = mine.filter((r) => r.attemptId === a.id);
    const next = attempts[i + 1];
    const last = own.length > 0 ? ms(own[own.length - 1].time) : a.startedAt;
    const stop = next ? Math.max(last, a.startedAt) : (settledAt ?? (detail.status === "running" ? now : last));
    const why = attemptEnd(i, attempts, detail, own);
    const kind = !next ? "attempt" : why.startsWith("parked") ? "attempt-parked" : "attempt-lost";
    spans.push({ lane: "attempts", kind, label: `attempt ${i + 1} · ${a.ownerId}`, start: a.startedAt, end: Math.max(stop, a.startedAt), attempt: i + 1, detail: why });
  });

  const open = new Map();
  const calls = new Map();
  const usage = { input: 0, output: 0, cost: undefined };
  for (const r of mine) {
    const t = ms(r.time);
    const attempt = attemptNo.get(r.attemptId);
    switch (r.kind) {
      case "assistant_message_started":
        open.set(`model:${r.attemptId}`, { start: t, model: r.payload.model, first: undefined });
        break;
      case "assistant_text_delta":
      case "assistant_thinking_delta":
      case "assistant_tool_call": {
        const m = open.get(`model:${r.attemptId}`);
        if (m && m.first === undefined) m.first = t;
        if (r.kind === "assistant_tool_call") calls.set(r.payload.callId, { name: r.payload.toolName, args: r.payload.args, at: t });
        break;
      }
      case "assistant_message_completed": {
        const m = open.get(`model:${r.attemptId}`);
        open.delete(`model:${r.attemptId}`);
        const u = usageOf(r);
        if (u) {
          usage.input += u.input;
          usage.output += u.output;
          if (u.cost !== undefined) usage.cost = (usage.cost ?? 0) + u.cost;
        }
        const s = m?.start ?? t;
        const ttft = m?.first === undefined ? undefined : m.first - s;
        const tokens = u ? `${u.input} in / ${u.output} out` : "no usage reported";
        spans.push({ lane: "model", kind: "model", label: `${m?.model ?? "model"}`, start: s, end: t, attempt, detail: `${tokens}${ttft === undefined ? "" : ` · first token ${ttft} ms`} · ${t - s} ms` });
        break;
      }
      case "tool_started":
        open.set(`tool:${r.payload.callId}`, t);
        break;
      case "tool_outcome": {
        // A callback's (or a child's) answer arrives as its call's outcome: the wait ends here.
        const waited = open.get(`wait:${r.payload.callId}`);
        if (waited) {
          open.delete(`wait:${r.payload.callId}`);
          spans.push({ lane: "waits", kind: waited.child ? "child" : "wait", label: waited.label, start: waited.start, end: t, detail: `answered${r.payload.isError ? " with an error" : ""} · waited ${t - waited.start} ms${waited.child ? ` · child submission ${waited.child.childSubmissionId}` : ""}`, child: waited.child });
        }
        const call = calls.get(r.payload.callId);
        const s = open.get(`tool:${r.payload.callId}`) ?? call?.at ?? t;
        const text = (r.payload.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join(" ");
        const decided = call?.decision ? ` · ${call.decision}` : "";
        spans.push({
          lane: "tools",
          kind: r.payload.isError ? "tool-error" : "tool",
          label: r.payload.toolName,
          start: s,
          end: t,
          attempt,
          detail: `args ${JSON.stringify(call?.args ?? {})} → ${r.payload.isError ? "error: " : ""}${text.slice(0, 300)} · ${t - s} ms${decided}`,
        });
        break;
      }
      case "approval_requested":
        open.set(`wait:${r.payload.callId}`, { start: t, label: `approval: ${r.payload.toolName}`, args: r.payload.args });
        if (!calls.has(r.payload.callId)) calls.set(r.payload.callId, { name: r.payload.toolName, args: r.payload.args, at: t });
        break;
      case "callback_started":
        open.set(`wait:${r.payload.callId}`, { start: t, label: `callback: ${r.payload.toolName}` });
        break;
      case "task_spawned":
        open.set(`wait:${r.payload.callId}`, { start: t, label: `child: ${r.payload.agent}/${r.payload.childInstance}`, child: r.payload });
        break;
      case "approval_decided": {
        const w = open.get(`wait:${r.payload.callId}`);
        open.delete(`wait:${r.payload.callId}`);
        // Without authentication nobody is named (every caller is the operator then).
        const by = r.payload.decidedBy === undefined ? " (no principal: auth off)" : ` by ${r.payload.decidedBy}`;
        const who = r.payload.expired ? "expired" : `${r.payload.approved ? "approved" : "denied"}${by}`;
        const call = calls.get(r.payload.callId);
        if (call) call.decision = who;
        spans.push({ lane: "waits", kind: r.payload.approved ? "wait" : "wait-denied", label: w?.label ?? "approval", start: w?.start ?? t, end: t, detail: `${who}${r.payload.reason ? `: ${r.payload.reason}` : ""} · waited ${t - (w?.start ?? t)} ms` });
        break;
      }
      case "compaction":
        spans.push({ lane: "model", kind: "compaction", label: `compaction (${r.payload.reason ?? "threshold"})`, start: t, end: t, attempt, detail: `summarized messages ${r.payload.startIdx}–${r.payload.endIdx}` });
        break;
      case "submission_settled": {
        const p = r.payload;
        if (p.usage) {
          usage.input = p.usage.input ?? usage.input;
          usage.output = p.usage.output ?? usage.output;
        }
        if (p.cost?.total !== undefined) usage.cost = p.cost.total;
        spans.push({ lane: "outcome", kind: p.status === "succeeded" ? "settled" : "settled-failed", label: p.status, start: t, end: t, detail: p.error ?? "" });
        break;
      }
      default:
        break;
    }
  }
  // Still open: a wait not answered yet (or a child that reports back through its own log).
  for (const [key, w] of open) {
    if (!key.startsWith("wait:")) continue;
    const child = w.child;
    spans.push({ lane: "waits", kind: child ? "child" : "wait-open", label: w.label, start: w.start, end: end, detail: child ? `child submission ${child.childSubmissionId}` : `waiting ${end - w.start} ms`, child });
  }
  // A model call its attempt never completed ends where its attempt did.
  for (const [key, m] of open) {
    if (!key.startsWith("model:")) continue;
    const attempt = attemptNo.get(key.slice("model:".length));
    const stop = spans.find((s) => s.lane === "attempts" && s.attempt === attempt)?.end ?? end;
    spans.push({ lane: "model", kind: "model-open", label: m.model, start: m.start, end: Math.max(stop, m.start), attempt, detail: "no completed message (the attempt ended mid-call)" });
  }
  return { start, end, spans, usage };
}
