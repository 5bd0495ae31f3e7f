import type { SimpleStreamOptions } from "@earendil-works/pi-ai";

/**
 * Where a provider's wire puts tool results in a user turn (Anthropic Messages, Bedrock
 * Converse, Gemini), pi-ai sends a user message that follows tool results (a steer delivered at
 * that turn boundary) as a second user turn in a row. These APIs' request fields, by pi-ai api id:
 * the list of turns and the field of a turn holding its blocks.
 */
const USER_TURN_FIELDS: Readonly<Record<string, { turns: string; blocks: string }>> = {
  "anthropic-messages": { turns: "messages", blocks: "content" },
  "bedrock-converse-stream": { turns: "messages", blocks: "content" },
  "google-generative-ai": { turns: "contents", blocks: "parts" },
  "google-vertex": { turns: "contents", blocks: "parts" },
};

type Turn = Record<string, unknown> & { role?: unknown };

/**
 * A provider request with each run of adjacent user turns folded into one turn holding their
 * blocks in order (tool results first, as these APIs require), or undefined when there is
 * nothing to fold or the API is not one of those above. The request is not mutated.
 */
export function foldUserTurns(api: string, payload: unknown): unknown {
  const fields = USER_TURN_FIELDS[api];
  if (fields === undefined || payload === null || typeof payload !== "object") return undefined;
  const turns = (payload as Record<string, unknown>)[fields.turns];
  if (!Array.isArray(turns)) return undefined;
  const folded: Turn[] = [];
  let changed = false;
  for (const turn of turns as Turn[]) {
    const previous = folded.at(-1);
    if (turn?.role !== "user" || previous?.role !== "user") {
      folded.push(turn);
      continue;
    }
    const blocks = (t: Turn): unknown[] => {
      const value = t[fields.blocks];
      return Array.isArray(value) ? value : typeof value === "string" ? [{ type: "text", text: value }] : [];
    };
    folded[folded.length - 1] = { ...previous, [fields.blocks]: [...blocks(previous), ...blocks(turn)] };
    changed = true;
  }
  return changed ? { ...(payload as Record<string, unknown>), [fields.turns]: folded } : undefined;
}

/**
 * Stream options whose `onPayload` folds adjacent user turns (after the caller's own
 * `onPayload`, if any), so the model sees strictly alternating turns on every wire.
 */
export function withStrictTurns(options: SimpleStreamOptions | undefined): SimpleStreamOptions {
  const inner = options?.onPayload;
  return {
    ...options,
    onPayload: async (payload, model) => {
      const own = inner === undefined ? undefined : await inner(payload, model);
      const current = own === undefined ? payload : own;
      return foldUserTurns(model.api, current) ?? own;
    },
  };
}
