/**
 * What a delayed message's settlement reads (issue 33, point 4): its own records start when it
 * joins its session's order, not at its admission, so the orphan cascade (an agent with `task`
 * targets) and the usage of its earlier attempts read from there, and a delayed message that
 * settles after the session wrote many records while it waited reads no more than a plain
 * message admitted when it joined. Above the store port: the memory store behind a wrapper that
 * counts the records `readRecords` returns, the clock moved by hand (record ids carry their time).
 */
import { describe, expect, it } from "vitest";
import { cascadeToChildren } from "../../../src/engine/cancel.ts";
import { usageOfEarlierAttempts } from "../../../src/engine/earlier-usage.ts";
import type { AttemptContext } from "../../../src/engine/engine-context.ts";
import { resolveSubagents } from "../../../src/engine/subagents.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { ManualClock } from "../../../src/ports/clock.ts";
import type { RecordDraft } from "../../../src/protocol/records.ts";
import type { Store } from "../../../src/store/store.ts";
import type { Submission } from "../../../src/store/submission.ts";

const HOUR = 3_600_000;
const key = { agent: "lead", instance: "shop", session: "default" };

/** `store` with a count of the records its reads returned. */
function counting(store: Store): { store: Store; read: () => number; reset: () => void } {
  let read = 0;
  const wrapped = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === "readRecords") {
        return async (...args: Parameters<Store["readRecords"]>) => {
          const records = await target.readRecords(...args);
          read += records.length;
          return records;
        };
      }
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: wrapped, read: () => read, reset: () => (read = 0) };
}

function draft(conversationId: string, submissionId: string, kind: RecordDraft["kind"], payload: unknown, at: number): RecordDraft {
  return { kind, conversationId, session: key.session, submissionId, time: new Date(at).toISOString(), payload } as RecordDraft;
}

/** A submission row as the settlement hands it to the cascade and the usage read. */
function row(id: string, conversationId: string, createdAt: number, notBefore?: number): Submission {
  return {
    id,
    conversationId,
    sessionKey: key,
    status: "terminalizing",
    input: { kind: "user", body: id, ...(notBefore !== undefined ? { notBefore: new Date(notBefore).toISOString() } : {}) },
    attemptCount: 2,
    createdAt,
    updatedAt: createdAt,
    depth: 0,
    pendingResume: false,
    cancelRequested: false,
  };
}

describe("a delayed message's settlement reads from when it joined its session's order", () => {
  it("the orphan cascade and the earlier attempts' usage read no more for a delayed message than for a plain one at the same point", async () => {
    const clock = new ManualClock(Date.parse("2026-03-01T12:00:00Z"));
    const base = createMemoryStore({ clock });
    const { store, read, reset } = counting(base);
    const agents = { lead: { initialize: () => ({}) as never }, helper: { initialize: () => ({}) as never } };
    const ctx = { store, clock, subagents: resolveSubagents({ lead: ["helper"] }, undefined, agents), definitions: new Map(Object.entries(agents)) } as unknown as AttemptContext;
    const { conversation } = await base.ensureConversation({ id: "conv-1", key, createdAt: clock.now() });

    // Admitted now for an hour from now; meanwhile the session goes on and writes 200 records.
    const admittedAt = clock.now();
    const joinsAt = admittedAt + HOUR;
    for (let i = 0; i < 200; i++) {
      await clock.advance(HOUR / 250);
      await base.appendRecords(conversation.id, [draft(conversation.id, `other-${i % 10}`, "assistant_text_delta", { delta: "meanwhile" }, clock.now())]);
    }
    clock.set(joinsAt);
    // At its time it joins and runs: a spawn and a completed message with its usage, over two attempts.
    const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15 };
    const own = (id: string) => [
      draft(conversation.id, id, "task_spawned", { callId: `call-${id}`, childSubmissionId: `child-of-${id}`, agent: "helper" }, clock.now()),
      draft(conversation.id, id, "assistant_message_completed", { message: { role: "assistant", body: { usage } } }, clock.now()),
    ];
    await base.appendRecords(conversation.id, own("delayed"));
    const delayed = row("delayed", conversation.id, admittedAt, joinsAt);
    const plain = row("plain", conversation.id, joinsAt);

    reset();
    await cascadeToChildren(ctx, delayed);
    const delayedCascade = read();
    expect((await usageOfEarlierAttempts(ctx, delayed)).usage, "its own usage is still found").toEqual(usage);
    const delayedUsage = read() - delayedCascade;

    await base.appendRecords(conversation.id, own("plain"));
    reset();
    await cascadeToChildren(ctx, plain);
    const plainCascade = read();
    expect((await usageOfEarlierAttempts(ctx, plain)).usage).toEqual(usage);
    const plainUsage = read() - plainCascade;

    expect(delayedCascade, `cascade: the delayed message read ${delayedCascade}, the plain one ${plainCascade}`).toBeLessThanOrEqual(plainCascade);
    expect(delayedUsage, `usage: the delayed message read ${delayedUsage}, the plain one ${plainUsage}`).toBeLessThanOrEqual(plainUsage);
  });
});
