import { readUIMessageStream } from "ai";
import type { ConversationRecord } from "../protocol/records.ts";
import { SubmissionChunker } from "./submission-chunker.ts";
import type { HarnessUIMessage, HarnessUIMessageChunk } from "./ui-message.ts";

/**
 * A conversation's records as UI messages, in order: each dispatched user message (its id is
 * its submission's), then that submission's reply as the live stream builds it (the same
 * chunks, applied by the AI SDK's own `readUIMessageStream`). Records must be in log order.
 */
export async function uiMessagesOf(records: Iterable<ConversationRecord>): Promise<HarnessUIMessage[]> {
  const order: Array<HarnessUIMessage | { chunker: SubmissionChunker; chunks: HarnessUIMessageChunk[] }> = [];
  const chunkers = new Map<string, { chunker: SubmissionChunker; chunks: HarnessUIMessageChunk[] }>();
  for (const record of records) {
    const submissionId = record.submissionId;
    if (submissionId === undefined) continue;
    let entry = chunkers.get(submissionId);
    if (!entry) {
      const first = userMessageOf(record);
      if (first) order.push(first);
      const chunker = new SubmissionChunker(submissionId, { errors: false });
      entry = { chunker, chunks: chunker.start() };
      chunkers.set(submissionId, entry);
      order.push(entry);
    }
    entry.chunks.push(...entry.chunker.apply(record));
  }
  const messages: HarnessUIMessage[] = [];
  for (const item of order) {
    if ("role" in item) {
      messages.push(item);
      continue;
    }
    const reply = await replay(item.chunks);
    if (reply && reply.parts.length > 0) messages.push(reply);
  }
  return messages;
}

/** The user message a submission's first record dispatched, if it is one (not a steer, a signal, a compaction). */
export function userMessageOf(record: ConversationRecord): HarnessUIMessage | undefined {
  if (record.kind !== "user_message" || record.payload.origin !== undefined || record.submissionId === undefined) return undefined;
  return { id: record.submissionId, role: "user", parts: [{ type: "text", text: record.payload.body }] };
}

/** The message a finished list of chunks builds. */
async function replay(chunks: HarnessUIMessageChunk[]): Promise<HarnessUIMessage | undefined> {
  const stream = new ReadableStream<HarnessUIMessageChunk>({
    start(controller) {
      for (const chunk of coalesced(chunks)) controller.enqueue(chunk);
      controller.close();
    },
  });
  let last: HarnessUIMessage | undefined;
  for await (const message of readUIMessageStream<HarnessUIMessage>({ stream, terminateOnError: false, onError: () => {} })) last = message;
  return last;
}

/**
 * Adjacent deltas of one part joined into one: the reader copies the message at every chunk, so
 * a replay of a long reply delta by delta would cost its length squared.
 */
function coalesced(chunks: HarnessUIMessageChunk[]): HarnessUIMessageChunk[] {
  const out: HarnessUIMessageChunk[] = [];
  for (const chunk of chunks) {
    const last = out.at(-1);
    if (last && (chunk.type === "text-delta" || chunk.type === "reasoning-delta") && last.type === chunk.type && last.id === chunk.id) {
      out[out.length - 1] = { ...last, delta: last.delta + chunk.delta };
    } else out.push(chunk);
  }
  return out;
}
