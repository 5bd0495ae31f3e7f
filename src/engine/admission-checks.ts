/**
 * Admission's checks that need more than the message itself: a result schema must compile, and
 * every attachment ref must name bytes the store holds. Both run before anything is stored, so a
 * dispatch that would fail later for these reasons is refused now.
 */
import { InvalidDispatch } from "../errors.ts";
import type { AdmissionStore } from "../store/store.ts";
import type { DispatchMessage } from "../store/submission.ts";

/**
 * `InvalidDispatch` with the compiler's message for a result schema that does not compile (or
 * breaks a limit: size, depth, an unsupported pattern, the compile's deadline or heap);
 * `ResultSchemaBusy` when too many schemas wait to be checked; `AttachmentNotFound` naming the
 * first attachment digest the store does not hold. The schema compiler (ajv) is loaded only when
 * a message carries a schema: the http function's cold start does not parse it.
 */
export async function checkAdmissible(store: Pick<AdmissionStore, "getAttachmentRef">, message: DispatchMessage): Promise<void> {
  if (message.resultSchema !== undefined) {
    const { resultSchemaError } = await import("../drive/structured-result.ts");
    const problem = await resultSchemaError(message.resultSchema);
    if (problem !== undefined) throw new InvalidDispatch(`invalid resultSchema: ${problem}`);
  }
  // In order, one at a time: the first missing digest is the one named ("attachment not found: …").
  for (const attachment of message.attachments ?? []) await store.getAttachmentRef(attachment.digest);
}
