import type { PendingApproval } from "../protocol/approvals.ts";
import type { SubmissionDetail, SubmissionPage, SubmissionRetryView, SubmissionSummary, WaitEntry } from "../protocol/submission-view.ts";
import { retryReasonText, retryTimeText } from "./retry-text.ts";
import { terminalJson, terminalText as one } from "./terminal-text.ts";

/**
 * The operator's view for a person (`harness ls`): one line per submission, newest first, with
 * its status, attempts, when it was admitted and how long it took, its outcome and its tokens.
 * Every cell from the server is escaped (`terminalText`) before the columns are measured.
 */
export function formatSubmissionPage(page: SubmissionPage): string {
  if (page.submissions.length === 0) return "no submissions";
  const rows = page.submissions.map((s) => [
    one(s.id),
    one(s.status) + (s.cancelRequested && s.status !== "settled" ? " (cancelling)" : s.retry !== undefined ? " (retrying)" : ""),
    String(s.attemptCount),
    isoTime(s.createdAt),
    s.settledAt === undefined ? "-" : duration(s.settledAt - s.createdAt),
    outcomeText(s),
    tokens(s),
  ]);
  const table = [["ID", "STATUS", "ATTEMPTS", "CREATED", "TOOK", "OUTCOME", "TOKENS"], ...rows];
  const widths = table[0]!.map((_, col) => Math.max(...table.map((row) => row[col]!.length)));
  const lines = table.map((row) => row.map((cell, col) => (col === row.length - 1 ? cell : cell.padEnd(widths[col]!))).join("  ").trimEnd());
  if (page.next !== undefined) lines.push(`more: --after ${one(page.next)}`);
  return lines.join("\n");
}

/** One submission with its input and attempts (`harness ls <target> <submissionId>`). */
export function formatSubmissionDetail(s: SubmissionDetail): string {
  const lines = [
    `submission  ${one(s.id)}`,
    `session     ${one(s.session)} (conversation ${one(s.conversationId)})`,
    `status      ${one(s.status)}${s.cancelRequested ? " (cancel requested)" : ""}`,
    `message     [${one(s.input.kind)}${s.input.signal ? ` ${one(s.input.signal.type)}` : ""}] ${oneLine(s.input.body, 200)}`,
    `created     ${isoTime(s.createdAt)}`,
  ];
  if (s.settledAt !== undefined) lines.push(`settled     ${isoTime(s.settledAt)} (took ${duration(s.settledAt - s.createdAt)})`);
  lines.push(`outcome     ${outcomeText(s)}`);
  if (s.waitingFor !== undefined) lines.push(`waits for   ${s.waitingFor.map(waitText).join("; ")}`);
  if (s.retry !== undefined) lines.push(`retrying    ${retryLine(s.retry)}`);
  if (s.lastError) lines.push(`last error  ${oneLine(s.lastError, 200)}`);
  if (s.outcome?.usage) lines.push(`tokens      ${tokens(s)} (in ${s.outcome.usage.input}, out ${s.outcome.usage.output})`);
  if (s.outcome?.cost) lines.push(`cost        $${s.outcome.cost.total.toFixed(6)}`);
  if (s.outcome?.result !== undefined) lines.push(`result      ${oneLine(terminalJson(s.outcome.result), 200)}`);
  lines.push(`attempts    ${s.attemptCount}`);
  for (const a of s.attempts) lines.push(`  ${one(a.id)}  started ${isoTime(a.startedAt)}  by ${one(a.ownerId)}`);
  return lines.join("\n");
}

/**
 * The calls a session waits on a person's decision for, under `harness ls`: one line each with
 * the command that decides it.
 */
export function formatPendingApprovals(target: string, approvals: readonly PendingApproval[]): string {
  if (approvals.length === 0) return "";
  const lines = ["pending approvals:"];
  for (const a of approvals) {
    lines.push(`  ${one(a.callId)}  ${one(a.toolName)} ${oneLine(terminalJson(a.args ?? {}), 80)}  expires ${isoTime(a.expiresAt)}`);
    lines.push(`    harness approve ${one(target)} ${one(a.submissionId)} ${one(a.callId)}   (or: harness deny … --reason "…")`);
  }
  return lines.join("\n");
}

/** One wait entry for a person: `approval refund (call-1)`, `2 children`, `time 2026-…`. */
function waitText(e: WaitEntry): string {
  switch (e.kind) {
    case "child":
      return `child (${one(e.callId)})`;
    case "approval":
      return `approval ${one(e.toolName)} (${one(e.callId)}) until ${isoTime(e.expiresAt)}`;
    case "callback":
      return `callback ${one(e.toolName)} (${one(e.callId)}) until ${isoTime(e.expiresAt)}`;
    case "time":
      return `time ${isoTime(e.until)}`;
  }
}

/** Why it waits for its next try, and when that is (ADR 0053). */
function retryLine(retry: SubmissionRetryView): string {
  return `${retryReasonText(retry)}, next try ${retry.nextAttemptAt === undefined ? "now" : retryTimeText(retry.nextAttemptAt)}`;
}

function outcomeText(s: SubmissionSummary): string {
  if (s.status === "waiting" && s.waitingFor !== undefined) return `waits: ${s.waitingFor.map(waitText).join("; ")}`;
  if (s.retry !== undefined) return `${retryLine(s.retry)}: ${oneLine(s.retry.error, 80)}`;
  const o = s.outcome;
  if (!o) return "-";
  if (o.status === "succeeded") return "succeeded";
  return `failed${o.errorCode ? ` [${one(o.errorCode)}]` : ""}${o.error ? ` ${oneLine(o.error, 60)}` : ""}`;
}

function tokens(s: SubmissionSummary): string {
  return s.outcome?.usage ? String(s.outcome.usage.totalTokens) : "-";
}

function isoTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

function duration(ms: number): string {
  if (ms < 1_000) return `${ms}ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)}s`;
  return `${Math.floor(ms / 60_000)}m${String(Math.round((ms % 60_000) / 1_000)).padStart(2, "0")}s`;
}

/** A server's text on one line of at most `max` characters: whitespace runs as one space, controls escaped. */
function oneLine(text: string, max: number): string {
  const flat = one(text.replace(/\s+/g, " ").trim());
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
