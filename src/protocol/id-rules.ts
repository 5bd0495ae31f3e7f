/**
 * Identifier rules. They keep ids safe as URL path segments, DynamoDB keys and SQS group ids
 * (an instance id and a dispatch id, which is also a submission id, are path segments).
 * Instance ids admit `:` because a child instance is `parentInstance:safeCallId`. A record id (a
 * stream offset) is a ULID: Crockford base32, 26 characters. The request rules
 * (`runtime/requests.ts`) apply them to what callers send; a `task` call's child address is
 * checked against them too (`task-names.ts`).
 */
export const ID_RULES = {
  agent: /^[A-Za-z0-9_-]{1,64}$/,
  // `.` and `..` are refused: a URL path normalises them away, so no route could reach them.
  instance: /^(?!\.{1,2}$)[A-Za-z0-9._:~-]{1,256}$/,
  session: /^[A-Za-z0-9._:~-]{1,128}$/,
  dispatchId: /^(?!\.{1,2}$)[A-Za-z0-9._:~-]{1,256}$/,
  recordId: /^[0-9A-HJKMNP-TV-Z]{26}$/,
} as const;

/** The longest instance id and dispatch (submission) id, in characters (`ID_RULES`). */
export const MAX_ID_CHARS = 256;
