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

export async function benchHostileSchemas(rounds = 3): Promise<void> {
  const threaded = await startQuickstart();
  // The same bundle in a folder without the worker entry: its checker runs inline.
  const inlineDir = resolve(ROOT, "build/bench-inline");
  mkdirSync(inlineDir, { recursive: true });
  copyFileSync(resolve(ROOT, "build/quickstart.mjs"), resolve(inlineDir, "quickstart.mjs"));
  let inline: Quickstart | undefined;
  try {
    inline = await startQuickstart({ build: false, script: "build/bench-inline/quickstart.mjs" });
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
