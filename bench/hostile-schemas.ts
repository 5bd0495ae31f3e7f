/**
 * `npm run bench -- hostile-schemas`: `/healthz` latency and the server's memory while hostile
 * result schemas arrive (issue 24), on the quickstart as `npm start` runs it, side by side in one
 * run: compiled on the result-schema thread (the default) and inline on the event loop (a copy of
 * the same bundle without `result-schema-worker.mjs` beside it, which is how a bundle without the
 * worker entry runs). Each round sends, three at a time, three schemas that compile slowly (an
 * `anyOf` of 300 constants), one at the size limit (60 KiB of properties with `pattern` and
 * `format`) and a super-linear pattern, while a probe asks `/healthz` every 20 ms. The message
 * makes the keyless echo model's reply valid on its first turn (a fenced JSON string), so what is
 * measured is compiling and checking, not corrective turns echoing the schema back.
 */
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { ResultSchemaEngine } from "../src/drive/result-schema-engine.ts";
import { ResultSchemaThread } from "../src/drive/result-schema-thread.ts";
import { RESULT_SCHEMA_WORKER_URL } from "../src/drive/structured-result.ts";
import { startQuickstart, type Quickstart } from "./quickstart-process.ts";
import { atMost, figure, note } from "./report.ts";
import { percentile } from "./stats.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

interface Hostile {
  schema: unknown;
  body: string;
}

function hostileSchemas(round: number): Hostile[] {
  const fenced = (value: string) => `\`\`\`json\n${JSON.stringify(value)}\n\`\`\``;
  const slow = (salt: string): Hostile => ({
    schema: { anyOf: [{ type: "string" }, ...Array.from({ length: 300 }, (_, i) => ({ const: `${round}-${salt}-${i}` }))] },
    body: fenced("ok"),
  });
  const properties: Record<string, unknown> = {};
  for (let i = 0; JSON.stringify(properties).length < 60 * 1024; i++) properties[`r${round}f${i}`] = { type: "string", pattern: "^[a-z]+$", format: "email" };
  return [
    slow("a"),
    slow("b"),
    slow("c"),
    { schema: { anyOf: [{ type: "string" }, { type: "object", properties }] }, body: fenced("ok") },
    { schema: { type: "string", pattern: "^(a+)+$" }, body: fenced(`${"a".repeat(40)}!`) },
  ];
}

interface RoundResult {
  probes: number[];
  statuses: number[];
}

async function round(server: Quickstart, n: number): Promise<RoundResult> {
  const probes: number[] = [];
  const statuses: number[] = [];
  const hostile = hostileSchemas(n);
  let done = false;
  const sender = (async () => {
    for (let i = 0; i < hostile.length; i += 3) {
      const batch = hostile.slice(i, i + 3).map(({ schema, body }, j) =>
        fetch(`${server.url}/agents/assistant/hostile-${n}-${i + j}?wait=true`, {
          method: "POST",
          body: JSON.stringify({ kind: "user", body, resultSchema: schema }),
        }).then(async (r) => {
          await r.text();
          return r.status;
        }),
      );
      statuses.push(...(await Promise.all(batch)));
    }
  })().finally(() => (done = true));
  while (!done) {
    const t = performance.now();
    await (await fetch(`${server.url}/healthz`)).text();
    probes.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 20));
  }
  await sender;
  return { probes, statuses };
}

/**
 * The engine's memory under distinct schemas (600 of 20 patterns each, ~900 bytes), side by side:
 * one ajv instance for all (what ajv's `removeSchema` leaves behind) and the engine's fresh
 * instance per 256 KiB of schema JSON. Heap after a full collection.
 */
export function engineMemory(): void {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  const heapMiB = () => (gc(), gc(), process.memoryUsage().heapUsed / 2 ** 20);
  const patterned = (k: number) => ({
    type: "object",
    properties: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`p${i}`, { type: "string", pattern: `^x${k}_${i}$` }])),
  });
  for (const [mode, cacheBytes] of [
    ["one ajv instance", Number.MAX_SAFE_INTEGER],
    ["fresh instance per 256 KiB", undefined],
  ] as const) {
    let engine: ResultSchemaEngine | undefined = new ResultSchemaEngine({ cacheBytes });
    const before = heapMiB();
    for (let k = 0; k < 600; k++) engine.problem(patterned(k));
    figure(`engine heap after 600 distinct schemas, ${mode}`, heapMiB() - before, "MiB");
    engine = undefined;
  }
}

/** A schema past the thread's deadline, sent twice: the second answer does not wait for it again. */
export async function hostileAgain(): Promise<void> {
  const thread = new ResultSchemaThread(RESULT_SCHEMA_WORKER_URL, { jobTimeoutMs: 1_000 });
  try {
    await thread.problem({ type: "string" }); // started
    const hostile = { anyOf: Array.from({ length: 1_500 }, (_, i) => ({ const: `again-${i}` })) };
    for (const attempt of ["first", "second"]) {
      const t = performance.now();
      const answer = await thread.problem(hostile);
      figure(`deadline-breaking schema, ${attempt} answer`, performance.now() - t, "ms");
      note(String(answer));
    }
  } finally {
    await thread.close();
  }
}

export async function benchHostileSchemas(rounds = 3): Promise<void> {
  engineMemory();
  await hostileAgain();
  const threaded = await startQuickstart();
  // The same bundle where no worker entry lies beside it or one folder up (where a bundle's
  // chunks/ looks: structured-result.ts): its checker runs inline. (build/bench-inline/ alone
  // found build/result-schema-worker.mjs, so both sides ran on the thread.)
  const inlineDir = resolve(ROOT, "build/bench-inline/bundle");
  mkdirSync(inlineDir, { recursive: true });
  copyFileSync(resolve(ROOT, "build/quickstart.mjs"), resolve(inlineDir, "quickstart.mjs"));
  let inline: Quickstart | undefined;
  try {
    inline = await startQuickstart({ build: false, script: "build/bench-inline/bundle/quickstart.mjs" });
    const rssBefore = { thread: threaded.rssMiB(), inline: inline.rssMiB() };
    const results: Record<"thread" | "inline", RoundResult[]> = { thread: [], inline: [] };
    for (let i = 0; i < rounds; i++) {
      results.thread.push(await round(threaded, i));
      results.inline.push(await round(inline, i));
    }
    for (const [mode, server] of [
      ["thread", threaded],
      ["inline", inline],
    ] as const) {
      const probes = results[mode].flatMap((r) => r.probes);
      const statuses = results[mode].flatMap((r) => r.statuses);
      note(`${mode}: ${probes.length} /healthz probes while ${statuses.length} hostile schemas were admitted and checked (answers ${[...new Set(statuses)].join(", ")})`);
      figure(`${mode} /healthz p50`, percentile(probes, 50), "ms");
      figure(`${mode} /healthz p99`, percentile(probes, 99), "ms");
      figure(`${mode} /healthz max`, Math.max(...probes), "ms", mode === "thread" ? atMost(100) : undefined);
      note(`${mode} server RSS: ${rssBefore[mode].toFixed(0)} → ${server.rssMiB().toFixed(0)} MiB`);
    }
  } finally {
    await threaded.stop();
    await inline?.stop();
    rmSync(inlineDir, { recursive: true, force: true });
  }
}
