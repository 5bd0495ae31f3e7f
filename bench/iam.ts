/**
 * `npm run bench -- iam`: the least-privilege matrix (issue 35). Brings the basic example's stack
 * up from its template with IAM enforced, runs the rehearsal (`dev/local-cloud/rehearsal.ts`: a
 * turn with a tool, its stream, a delayed message and its cancel, an attachment, the deletion, the
 * sweep and the dlq drain), then takes each action of each role out in turn and replays every
 * call against the policy without it (`least-privilege.ts`). Prints the rehearsal, the matrix and
 * the time each part took.
 */
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { exampleAssembly } from "../dev/local-cloud/cloud-assembly.ts";
import { formatMatrix, leastPrivilegeMatrix } from "../dev/local-cloud/least-privilege.ts";
import { startLocalCloud } from "../dev/local-cloud/local-cloud.ts";
import { formatRehearsal, rehearse } from "../dev/local-cloud/rehearsal.ts";
import { readStackTemplate } from "../dev/local-cloud/stack-template.ts";
import { startEmulators } from "../test/support/emulators.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

export async function benchIam(): Promise<void> {
  let t = performance.now();
  const assembly = exampleAssembly(resolve(ROOT, "examples/basic/agents.ts"));
  console.log(`iam: assembly ${assembly.cached ? "cached" : "synthesized"} in ${Math.round(performance.now() - t)} ms`);
  const emulators = await startEmulators();
  Object.assign(process.env, emulators.env);
  const logs: string[] = [];
  try {
    t = performance.now();
    const cloud = await startLocalCloud({ assembly: assembly.dir, name: `bench-iam-${process.pid}`, sweeperRateMs: false, log: (l, s) => void logs.push(`[${s}] ${l}`) });
    console.log(`iam: local cloud up in ${Math.round(performance.now() - t)} ms`);
    try {
      t = performance.now();
      const result = await rehearse(cloud);
      console.log(`iam: rehearsal in ${Math.round(performance.now() - t)} ms, ${cloud.iam!.calls.length} gated calls\n${formatRehearsal(result, cloud.notEmulated)}`);
      t = performance.now();
      const rows = await leastPrivilegeMatrix(cloud, readStackTemplate(assembly.dir), assembly.dir);
      console.log(`\niam: least-privilege matrix (${rows.length} grants, replayed in ${Math.round(performance.now() - t)} ms)\n${formatMatrix(rows)}`);
      const unused = rows.filter((r) => r.verdict === "unused");
      console.log(`\niam: ${rows.filter((r) => r.verdict === "used").length} used, ${unused.length} unused by the rehearsal, ${rows.filter((r) => r.verdict === "not-exercised").length} not exercised locally`);
      if (!result.ok) console.log(logs.slice(-30).join("\n"));
    } finally {
      await cloud.stop();
    }
  } finally {
    await emulators.stop();
  }
}
