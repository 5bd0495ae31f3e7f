/**
 * The limits of the wire contract: what a request may carry and how a listing pages. The runtime
 * enforces them (`src/runtime/requests.ts`); clients may check early.
 */

/** The session of a request that names none. */
export const DEFAULT_SESSION = "default";

/** Largest message body in bytes (UTF-8), dispatched or injected; larger bodies belong in attachments. */
export const MAX_BODY_BYTES = 256 * 1024;

/** Longest cancel reason in bytes (UTF-8): it becomes the settlement's error. */
export const MAX_CANCEL_REASON_BYTES = 1024;

/** Page size of a submission listing: default and ceiling. */
export const SUBMISSION_PAGE = { defaultLimit: 20, maxLimit: 100 } as const;

/** Largest result schema, serialized as compact JSON, in bytes (UTF-8): a schema is code the server generates and runs (ADR 0026). */
export const MAX_RESULT_SCHEMA_BYTES = 64 * 1024;

/** Deepest nesting of objects and arrays in a result schema (the schema object itself is depth 1). */
export const MAX_RESULT_SCHEMA_DEPTH = 32;

/** Longest reply text checked against a result schema, in characters. */
export const MAX_RESULT_TEXT_CHARS = 64 * 1024;

/** Longest reason of an approval's decision in bytes (UTF-8): the model reads it (ADR 0025). */
export const MAX_DECISION_REASON_BYTES = 4096;

/** Longest callback error text in bytes (UTF-8): the model reads it (ADR 0025). */
export const MAX_CALLBACK_ERROR_BYTES = 16 * 1024;
