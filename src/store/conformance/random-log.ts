/**
 * Random conversation logs shaped like the harness writes them, for the checkpoint properties
 * (ADR 0018): several submissions, each over one or more attempts (an attempt may stop anywhere,
 * as a crash does), turns with streamed deltas, tool calls with or without outcomes (dangling
 * ones), steers and corrections, compactions (threshold ones mid-submission, manual ones), a
 * settlement that excludes its submission from the context, cancelled submissions that never
 * ran, and the last submission left running. A small share of compactions name a first kept
 * entry the harness never would (off the active path, a streaming delta, an unknown id).
 */
import { activeLeafPath, reduce } from "../../conversation/reducer.ts";
import type { ConversationRecord, RecordBody, RecordDraft } from "../../protocol/records.ts";

/** A seeded PRNG (mulberry32): the same seed gives the same log. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** What a generated log holds besides its records. */
export interface RandomLog {
  records: ConversationRecord[];
  /** Submissions with records and no settlement record (the last one, when left running). */
  running: string[];
  /** Compactions naming a first kept entry the harness never would. */
  oddPointers: number;
}

export interface RandomLogOptions {
  conversationId: string;
  session: string;
  /** Appends one batch and returns the stored records (a store's `appendRecords`, or a fake). */
  append: (drafts: RecordDraft[]) => Promise<ConversationRecord[]>;
  /** Submissions to generate (default 3–7). */
  submissions?: number;
}

/** A placeholder step: the compaction is planned when it is written. */
const COMPACTION: RecordBody = { kind: "compaction", payload: { summary: "", startIdx: 0, endIdx: 0 } };

/** Generates one log through `options.append`, batch by batch. */
export async function randomLog(random: () => number, options: RandomLogOptions): Promise<RandomLog> {
  const int = (n: number) => Math.floor(random() * n);
  const chance = (p: number) => random() < p;
  const records: ConversationRecord[] = [];
  let oddPointers = 0;
  const running: string[] = [];
  const write = async (bodies: RecordBody[], submissionId: string | undefined, attemptId?: string) => {
    const drafts = bodies.map(
      (b) =>
        ({
          ...b,
          conversationId: options.conversationId,
          session: options.session,
          ...(submissionId !== undefined ? { submissionId } : {}),
          ...(attemptId !== undefined ? { attemptId } : {}),
          time: new Date(1_700_000_000_000 + records.length * 1000).toISOString(),
        }) as RecordDraft,
    );
    records.push(...(await options.append(drafts)));
  };
  await write([{ kind: "conversation_created", payload: { agent: "a", instance: "i", session: options.session } }], undefined);

  const compaction = (): RecordBody => {
    const path = activeLeafPath(reduce(records));
    const starts = path.filter((r, i) => i > 0 && (r.kind === "user_message" || r.kind === "signal"));
    let kept: string | undefined = starts.length > 0 ? starts[int(starts.length)]!.id : undefined;
    if (chance(0.06) && records.length > 0) {
      // What the harness never writes: an entry off the path, a delta, an unknown id.
      oddPointers++;
      const pick = int(3);
      kept = pick === 0 ? records[int(records.length)]!.id : pick === 1 ? (records.find((r) => r.kind === "assistant_text_delta")?.id ?? "0") : "0UNKNOWN";
    }
    return {
      kind: "compaction",
      payload: { summary: `summary ${records.length}`, startIdx: 0, endIdx: 1, ...(kept !== undefined ? { firstKeptEntryId: kept } : {}), usage: { input: 3, output: 2, totalTokens: 5 }, reason: chance(0.5) ? "threshold" : "manual" },
    };
  };

  const total = options.submissions ?? 3 + int(5);
  for (let s = 0; s < total; s++) {
    const sub = `sub-${s}-${int(1e6)}`;
    if (chance(0.1)) {
      // Cancelled while queued: a settlement and nothing else.
      await write([{ kind: "submission_settled", payload: { status: "failed", errorCode: "cancelled", error: "cancelled" } }], sub);
      continue;
    }
    const last = s === total - 1;
    const attempts = 1 + int(3);
    let settled = false;
    for (let a = 0; a < attempts && !settled; a++) {
      const attempt = `att-${s}-${a}`;
      const steps: RecordBody[][] = [];
      if (a === 0) steps.push([chance(0.2) ? { kind: "signal", payload: { type: "tick", body: `tick ${s}` } } : { kind: "user_message", payload: { body: `question ${s}` } }]);
      const turns = 1 + int(3);
      for (let t = 0; t < turns; t++) {
        const calls = chance(0.4) ? 1 + int(2) : 0;
        const callIds = Array.from({ length: calls }, (_, c) => `call-${s}-${a}-${t}-${c}`);
        steps.push([{ kind: "assistant_message_started", payload: { model: "m", messageType: "message" } }]);
        for (let d = int(4); d > 0; d--) steps.push([{ kind: chance(0.8) ? "assistant_text_delta" : "assistant_thinking_delta", payload: { text: `delta ${s}.${t}.${d} ` } }]);
        for (const callId of callIds) steps.push([{ kind: "assistant_tool_call", payload: { callId, toolName: "tool", args: { q: callId } } }]);
        const stopReason = chance(0.1) ? "error" : calls > 0 ? "toolUse" : "stop";
        const content = [{ type: "text", text: `answer ${s}.${t}` }, ...callIds.map((id) => ({ type: "toolCall", id, name: "tool", arguments: { q: id } }))];
        steps.push([
          {
            kind: "assistant_message_completed",
            payload: { message: { role: "assistant", type: "message", body: { role: "assistant", content, stopReason, usage: { input: 10 + t, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15 + t } } } },
          },
        ]);
        for (const callId of callIds) {
          if (chance(0.85)) steps.push([{ kind: "tool_outcome", payload: { callId, toolName: "tool", content: [{ type: "text", text: `result ${callId}` }] } }]);
        }
        if (chance(0.15)) steps.push([{ kind: "user_message", payload: { body: `steer ${s}.${t}`, origin: chance(0.5) ? "steer" : "correction" } }]);
        // Planned when written (over the log as it is then).
        if (chance(0.2)) steps.push([COMPACTION]);
      }
      // An attempt may stop anywhere (a crash): the next one goes on from the log.
      const crash = a < attempts - 1 || (last && chance(0.7)) ? int(steps.length + 1) : steps.length;
      for (const step of steps.slice(0, crash)) {
        await write(step.map((b) => (b === COMPACTION ? compaction() : b)), sub, attempt);
      }
      if (crash === steps.length && !(last && chance(0.5))) {
        await write([{ kind: "submission_settled", payload: { status: "succeeded", usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2 }, ...(chance(0.1) ? { excludedFromContext: true as const } : {}) } }], sub, attempt);
        settled = true;
      }
    }
    if (!settled) running.push(sub);
  }
  return { records, running, oddPointers };
}
