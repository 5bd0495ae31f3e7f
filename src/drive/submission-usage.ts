import type { Usage } from "@earendil-works/pi-ai";
import type { ConversationRecord, SettledCost, SettledUsage } from "../protocol/records.ts";

/** What a submission consumed: token counts, and cost in USD when the model has prices. */
export interface SubmissionUsage {
  usage: SettledUsage;
  cost?: SettledCost;
}

/**
 * Sums the usage of one submission from its records: every assistant message it completed,
 * in every attempt (an abandoned attempt's tokens were billed too, failed turns included), and
 * the summarization of every compaction it authored. Costs are pi-ai's, computed from the
 * model catalog's prices; `cost` is absent when nothing had a price. Pure.
 */
export function submissionUsage(records: Iterable<ConversationRecord>, submissionId: string): SubmissionUsage {
  const usage: SettledUsage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 };
  const cost: SettledCost = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };
  for (const record of records) {
    if (record.submissionId !== submissionId) continue;
    let reported: unknown;
    if (record.kind === "assistant_message_completed") reported = (record.payload.message.body as { usage?: unknown } | undefined)?.usage;
    else if (record.kind === "compaction") reported = record.payload.usage;
    else continue;
    add(usage, cost, reported);
  }
  return cost.total > 0 ? { usage, cost } : { usage };
}

/** Adds a stored pi `Usage` (from storage: tolerate missing or malformed fields). */
function add(usage: SettledUsage, cost: SettledCost, reported: unknown): void {
  if (reported === null || typeof reported !== "object") return;
  const u = reported as Partial<Usage>;
  usage.input += count(u.input);
  usage.output += count(u.output);
  usage.cacheRead += count(u.cacheRead);
  usage.cacheWrite += count(u.cacheWrite);
  usage.totalTokens += count(u.totalTokens) || count(u.input) + count(u.output) + count(u.cacheRead) + count(u.cacheWrite);
  const c = u.cost;
  if (c === null || typeof c !== "object") return;
  cost.input += count(c.input);
  cost.output += count(c.output);
  cost.cacheRead += count(c.cacheRead);
  cost.cacheWrite += count(c.cacheWrite);
  cost.total += count(c.total);
}

function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : 0;
}
