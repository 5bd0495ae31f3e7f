/**
 * The runtime checks every request once, with one set of rules (src/runtime/requests.ts): each
 * entry point refuses malformed ids, unknown agents and bad offsets with a typed error, and
 * nothing is stored. The transport reaches the store only through these methods.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isHarnessError } from "../../../src/errors.ts";
import type { Doorbell, WorkQueue } from "../../../src/ports/queue.ts";
import { createRuntime } from "../../../src/runtime/runtime.ts";
import { ID_RULES } from "../../../src/protocol/id-rules.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";

const idle: () => never = () => {
  throw new Error("not run here");
};

/** A runtime whose doorbells nobody answers: what it admits stays queued. */
function unstarted() {
  const store = createMemoryStore();
  const rung: Doorbell[] = [];
  const queue: WorkQueue = { ring: async (d) => void rung.push(d) };
  const runtime = createRuntime({ agents: { assistant: { initialize: idle } }, store, queue });
  return { runtime, store, rung };
}

async function codeOf(work: Promise<unknown>): Promise<string> {
  const err = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isHarnessError(err)) throw new Error(`expected a harness error, got ${String(err)}`);
  return err.code;
}

describe("request rules", () => {
  const badAddresses: Array<[string, { agent: string; instance: string; session?: string }, string]> = [
    ["agent name with a slash", { agent: "a/b", instance: "w" }, "invalid_request"],
    ["unknown agent", { agent: "ghost", instance: "w" }, "unknown_agent"],
    ["empty instance", { agent: "assistant", instance: "" }, "invalid_request"],
    ["instance with a space", { agent: "assistant", instance: "w x" }, "invalid_request"],
    ["instance too long", { agent: "assistant", instance: "i".repeat(257) }, "invalid_request"],
    ["session with a slash", { agent: "assistant", instance: "w", session: "s/t" }, "invalid_request"],
  ];

  it("every entry point that takes an address refuses a bad one the same way, storing nothing", async () => {
    const { runtime, store, rung } = unstarted();
    const entries: Array<[string, (a: { agent: string; instance: string; session?: string }) => Promise<unknown>]> = [
      ["dispatch", (a) => runtime.dispatch({ ...a, message: { kind: "user", body: "hi" } })],
      ["steer", (a) => runtime.steer({ ...a, body: "hi" })],
      ["followUp", (a) => runtime.followUp({ ...a, body: "hi" })],
      ["conversation", (a) => runtime.conversation(a)],
      ["sessionLive", (a) => runtime.sessionLive(a)],
    ];
    for (const [entry, call] of entries) {
      for (const [what, address, code] of badAddresses) {
        expect(await codeOf(call(address)), `${entry}: ${what}`).toBe(code);
      }
    }
    expect(rung).toEqual([]);
    for (const status of ["queued", "running", "waiting", "terminalizing", "settled"] as const) {
      expect(await store.listByStatus(status)).toEqual([]);
    }
    await runtime.close();
  });

  it("refuses a malformed dispatch id, steer body and record offset", async () => {
    const { runtime } = unstarted();
    const message = { kind: "user" as const, body: "hi" };
    expect(await codeOf(runtime.dispatch({ agent: "assistant", instance: "w", dispatchId: "a b", message }))).toBe("invalid_request");
    expect(await codeOf(runtime.steer({ agent: "assistant", instance: "w", body: "" }))).toBe("invalid_request");
    expect(await codeOf(runtime.followUp({ agent: "assistant", instance: "w", body: "x".repeat(256 * 1024 + 1) }))).toBe(
      "invalid_request",
    );
    const { conversationId } = await runtime.dispatch({ agent: "assistant", instance: "w", message });
    for (const offset of ["not-an-id", "0".repeat(27), "01J" + "!".repeat(23)]) {
      expect(await codeOf(runtime.records(conversationId, offset)), offset).toBe("invalid_request");
    }
    expect((await runtime.records(conversationId, "")).map((r) => r.kind)).toEqual(["conversation_created"]);
    await runtime.close();
  });

  it("keeps admission's message rules as invalid_dispatch", async () => {
    const { runtime } = unstarted();
    const code = await codeOf(runtime.dispatch({ agent: "assistant", instance: "w", message: { kind: "shout" as never, body: "x" } }));
    expect(code).toBe("invalid_dispatch");
    await runtime.close();
  });

  it("refuses agent names that break the rule when the runtime is built", () => {
    expect(() => createRuntime({ agents: { "a b": { initialize: idle } }, store: createMemoryStore() })).toThrow(
      /createRuntime: invalid agent name "a b"/,
    );
    expect(ID_RULES.agent.test("a b")).toBe(false);
  });
});

describe("sessionLive", () => {
  const key = { agent: "assistant", instance: "w" };

  it("is false with no work, true while a submission is queued or running, false once it waits on subagents or settled", async () => {
    const { runtime, store } = unstarted();
    expect(await runtime.sessionLive(key)).toBe(false);
    const { submissionId } = await runtime.dispatch({ ...key, message: { kind: "user", body: "hi" } });
    expect(await runtime.sessionLive(key)).toBe(true);
    expect(await runtime.sessionLive({ ...key, session: "other" })).toBe(false);
    const attemptId = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
    await store.claimSubmission({ submissionId, attemptId, ownerId: "o", leaseExpiresAt: Date.now() + 60_000 });
    expect(await runtime.sessionLive(key)).toBe(true);
    await store.waitSubmission({ submissionId, attemptId });
    expect(await runtime.sessionLive(key), "waiting on children appends nothing").toBe(false);
    await runtime.close();
  });
});

describe("transport layering", () => {
  it("the runtime keeps its store to itself", () => {
    const { runtime } = unstarted();
    expect("store" in runtime).toBe(false);
    expect(Object.keys(runtime)).not.toContain("store");
  });

  it("src/http imports nothing of the engine, the drive, the stores or the store SPI (the runtime, its caller face, auth, errors and the wire only)", () => {
    const dir = join(import.meta.dirname, "../../../src/http");
    for (const file of readdirSync(dir).filter((f) => f.endsWith(".ts"))) {
      const text = readFileSync(join(dir, file), "utf8");
      const imports = [...text.matchAll(/from "(\.\.\/[^"]+)"/g)].map((m) => m[1]!);
      for (const path of imports) {
        expect(path, `${file} imports ${path}`).toMatch(/^\.\.\/(runtime\/(runtime|defaults|caller-runtime|runtime-requests)\.ts|errors\.ts|protocol\/[a-z-]+\.ts|auth\/[a-z-]+\.ts)$/);
      }
    }
  });

  it("src/client imports nothing outside src/client and src/protocol (the wire contract)", () => {
    const dir = join(import.meta.dirname, "../../../src/client");
    for (const file of readdirSync(dir).filter((f) => f.endsWith(".ts"))) {
      const text = readFileSync(join(dir, file), "utf8");
      const imports = [...text.matchAll(/from "(\.\.\/[^"]+)"/g)].map((m) => m[1]!);
      for (const path of imports) expect(path, `${file} imports ${path}`).toMatch(/^\.\.\/protocol\/[a-z-]+\.ts$/);
    }
  });
});
