import type { AttachmentRef, ConversationRecord, SettledPayload } from "../protocol/records.ts";
import { HarnessHttpError } from "./http-error.ts";
import type { SseEvent } from "./sse-parser.ts";

// What the client's calls answer, and how it reads the server's answers: a body that is not the
// expected shape is a typed `unexpected_response`, a fetch that got no answer `unreachable`.

/** What an admitted dispatch answers. */
export interface DispatchIds {
  submissionId: string;
  conversationId: string;
}

/**
 * A settled submission: its ids and outcome (`status`, `error?`, `errorCode?`, `result?`);
 * `result` has type `R` in a typed client (see {@link createClient}).
 */
export type SettledResult<R = unknown> = DispatchIds & Omit<SettledPayload, "result"> & { result?: R };

/** A settled result as read from the wire: its `result` is whatever the caller's type says (the server validated it). */
export type Outcome = SettledResult<any>;

/** What a cancel answers: settled (`cancelled`, with the outcome) or stopping (`cancelling`). */
export interface CancelAnswer {
  submissionId: string;
  status: "cancelled" | "cancelling";
  outcome?: SettledPayload;
}

/** A fetch that got no answer becomes a typed `unreachable` error naming the URL; an abort stays an abort. */
export function networkFailure(err: unknown, url: string, signal: AbortSignal | undefined): unknown {
  if (signal?.aborted || err instanceof HarnessHttpError || (err instanceof Error && err.name === "AbortError")) return err;
  return HarnessHttpError.unreachable(url.split("?")[0]!, err);
}

export async function readJson(res: Response): Promise<Record<string, unknown>> {
  const text = await res.text();
  try {
    const value: unknown = JSON.parse(text);
    if (value !== null && typeof value === "object" && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // reported below
  }
  throw new HarnessHttpError(res.status, "unexpected_response", `expected a JSON object, got ${JSON.stringify(text.slice(0, 200))}`);
}

export function refOf(status: number, body: Record<string, unknown>): AttachmentRef {
  const { digest, mediaType, size } = body;
  if (typeof digest !== "string" || typeof mediaType !== "string" || typeof size !== "number") {
    throw new HarnessHttpError(status, "unexpected_response", "response lacks digest/mediaType/size");
  }
  return { digest, mediaType, size };
}

export function idsOf(status: number, body: Record<string, unknown>): DispatchIds {
  const { submissionId, conversationId } = body;
  if (typeof submissionId !== "string" || typeof conversationId !== "string") {
    throw new HarnessHttpError(status, "unexpected_response", "response lacks submissionId/conversationId");
  }
  return { submissionId, conversationId };
}

export function parseRecord(event: SseEvent): ConversationRecord {
  let record: ConversationRecord;
  try {
    record = JSON.parse(event.data) as ConversationRecord;
  } catch {
    throw new HarnessHttpError(200, "unexpected_response", `event ${event.type}: data is not JSON`);
  }
  if (typeof record?.id !== "string" || typeof record.kind !== "string") {
    throw new HarnessHttpError(200, "unexpected_response", `event ${event.type}: data is not a record`);
  }
  return record;
}
