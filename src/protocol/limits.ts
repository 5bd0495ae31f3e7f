/**
 * The limits of the wire contract: what a request may carry and how a listing pages. The runtime
 * enforces them (`src/runtime/requests.ts`); clients may check early.
 */

/** The session of a request that names none. */
export const DEFAULT_SESSION = "default";

/** Largest message body in bytes (UTF-8), dispatched or injected; larger bodies belong in attachments. */
export const MAX_BODY_BYTES = 256 * 1024;

/**
 * Most records one import may bring (`POST …/import`, ADR 0034), counted before anything is
 * written: with the 32 MiB body limit and every message within {@link MAX_BODY_BYTES}, no import
 * makes a rebuild cost more than a conversation of as many records built by dispatches (issue 33).
 */
export const MAX_IMPORT_RECORDS = 100_000;

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

/**
 * Largest compiled program of a result schema's `pattern` or `patternProperties` key, in RE2
 * instructions: matching costs the text's length times this size. A counted repetition repeats its
 * atom (`[a-z]{0,255}` is 514 instructions, `a[ab]{999}c` 1,003).
 */
export const MAX_RESULT_PATTERN_INSTRUCTIONS = 1000;

/**
 * Most steps one check of a reply against a result schema may take: matching a pattern costs the
 * text's length times its size, a call of a compiled validator (each `$ref`) 150 steps. About half
 * a second of work on a loaded machine (`drive/check-budget.ts`).
 */
export const MAX_RESULT_CHECK_STEPS = 20_000_000;
