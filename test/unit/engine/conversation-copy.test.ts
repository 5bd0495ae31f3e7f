/**
 * A copy (fork, import; ADR 0034) against a dispatch into its target session (issue 33): the copy
 * is written under its new conversation id before the session holds it, so a dispatch that
 * arrives while the copy is half written can neither write into it nor interleave with it. The
 * race is forced: the store pauses the copy after its first chunk (100 records of 250), and a
 * dispatch into the target session is admitted and run to its settlement then. Afterwards the
 * session's conversation is the dispatch's alone and the copy is refused `conversation_exists`
 * (nothing of it visible); or, with the dispatch after the copy, the copy whole and the dispatch
 * run on it. The same on DynamoDB Local: `conversation-copy.dynamodb.aws.test.ts`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe } from "vitest";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { openSqliteStore } from "../../../src/sqlite/index.ts";
import { copyRaceCases } from "../../support/copy-race.ts";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "copy-race-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each([
  ["memory", () => createMemoryStore()],
  ["sqlite", () => openSqliteStore({ path: join(dir, `copy-${Math.random().toString(36).slice(2)}.db`) })],
])("a copy against a dispatch into its target session (%s store)", (_name, makeStore) => {
  copyRaceCases(async () => ({ store: makeStore(), dispose: async () => {} }));
});
