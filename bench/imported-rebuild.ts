/**
 * The rebuild of an imported conversation (issue 33, point 5): an export of N small
 * `user_message` records (adjacent, as an import can bring them) imported on the memory store,
 * then one dispatch: the claim rebuilds the whole log and projects N + 1 adjacent user messages
 * into one. Wall and CPU time of the import and of the dispatch until it settles, per N. Before
 * the fix the projection copied the growing run at every merge (quadratic): the dispatch after
 * 10,000 took 1.2 s, after 20,000 72 s (33 s of CPU, the event loop blocked). After it, on the
 * same shared 2-core machine: 0.65 s after 10,000, 1.4 s after 40,000 (0.6 s of CPU).
 */
import { scriptedModel } from "../src/agent/scripted-model.ts";
import { createMemoryStore } from "../src/memory/index.ts";
import { EXPORT_VERSION } from "../src/protocol/conversation-export.ts";
import { createRuntime } from "../src/runtime/runtime.ts";
import { figure, note } from "./report.ts";

const SIZES = [10_000, 40_000];

/** An export of `n` user messages of about 160 bytes each. */
function exportOf(n: number): string {
  const id = (i: number) => `01J${String(i).padStart(23, "0")}`;
  const record = (i: number, kind: string, payload: unknown) =>
    JSON.stringify({ type: "record", record: { id: id(i), kind, conversationId: "c", session: "default", time: "2026-01-01T00:00:00.000Z", payload } });
  const lines = [JSON.stringify({ type: "conversation", version: EXPORT_VERSION, agent: "chat", instance: "x", session: "default", conversationId: "c", createdAt: 0 })];
  lines.push(record(0, "conversation_created", { agent: "chat", instance: "x", session: "default" }));
  for (let i = 1; i <= n; i++) lines.push(record(i, "user_message", { body: `message ${i} ${"x".repeat(150)}` }));
  lines.push(JSON.stringify({ type: "end", records: n + 1, attachments: 0 }));
  return `${lines.join("\n")}\n`;
}

async function timed<T>(run: () => Promise<T>): Promise<{ value: T; ms: number; cpuMs: number }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await run();
  const used = process.cpuUsage(c0);
  return { value, ms: performance.now() - t0, cpuMs: (used.user + used.system) / 1000 };
}

export async function benchImportedRebuild(): Promise<void> {
  for (const n of SIZES) {
    const model = scriptedModel([[{ text: "ok" }], [{ text: "ok" }]]);
    const runtime = createRuntime({
      agents: { chat: { initialize: () => ({ model: model.model, streamFn: model.streamFn }) } },
      store: createMemoryStore(),
      onObserverError: () => {},
    });
    await runtime.start();
    try {
      const text = exportOf(n);
      const imported = await timed(() => runtime.importConversation({ agent: "chat", instance: "y" }, text));
      figure(`import of ${n.toLocaleString("en")} user messages (${(text.length / 2 ** 20).toFixed(1)} MiB): wall`, imported.ms, "ms");
      figure(`  cpu`, imported.cpuMs, "ms");
      const run = await timed(async () => {
        const admitted = await runtime.dispatch({ agent: "chat", instance: "y", message: { kind: "user", body: "hi" } });
        return runtime.wait(admitted.submissionId);
      });
      figure(`then one dispatch until settled (claim, rebuild, projection, turn): wall`, run.ms, "ms");
      figure(`  cpu`, run.cpuMs, "ms");
      if (run.value.status !== "succeeded") note(`  (settled ${run.value.status})`);
    } finally {
      await runtime.close();
    }
  }
}
