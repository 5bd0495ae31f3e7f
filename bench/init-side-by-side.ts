/**
 * The Lambda functions' init in two checkouts of the harness, measured alternately in one process
 * (a change against main on a shared, noisy machine): each checkout bundles its handlers with its
 * own construct options (`bench/lambda-bundles.ts`) and starts them in its own local function
 * host; containers of A and B start in turn, and each function's median init is printed.
 *
 *   node --disable-warning=ExperimentalWarning bench/init-side-by-side.ts <dirA> <dirB> [containers=11] [roles=http,worker,dlq,sweeper]
 *
 * A checkout needs its node_modules (a symlink will do), `bench/lambda-bundles.ts`,
 * `bench/lambda-agents.ts` and `dev/local-cloud/function-host.ts` (main since issue 28).
 */
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { median } from "./stats.ts";

interface Bundle {
  role: string;
  file: string;
}

interface Checkout {
  dir: string;
  bundles: Bundle[];
  bundleEnv(bundle: Bundle): Record<string, string>;
  removeBundles(bundles: Bundle[]): void;
  host: Record<string, new (options: object) => { start?(): Promise<unknown>; warm?(): Promise<unknown>; close(): Promise<void>; initMs: number[]; initCpuMs?: number[] }>;
}

const [dirA, dirB, containersArg, rolesArg] = process.argv.slice(2);
if (!dirA || !dirB) {
  console.error("usage: bench/init-side-by-side.ts <dirA> <dirB> [containers=11] [roles=http,worker,dlq,sweeper]");
  process.exit(2);
}
const CONTAINERS = Number(containersArg ?? 11);
const ROLES = (rolesArg ?? "http,worker,dlq,sweeper").split(",");

async function checkout(dir: string): Promise<Checkout> {
  const bundles = (await import(resolve(dir, "bench/lambda-bundles.ts"))) as {
    bundleLambdas(agents: string): Promise<Bundle[]>;
    bundleEnv(bundle: Bundle): Record<string, string>;
    removeBundles(bundles: Bundle[]): void;
  };
  const host = (await import(resolve(dir, "dev/local-cloud/function-host.ts"))) as Checkout["host"];
  return { dir, bundles: await bundles.bundleLambdas(resolve(dir, "bench/lambda-agents.ts")), bundleEnv: bundles.bundleEnv, removeBundles: bundles.removeBundles, host };
}

/** One container of `role` from checkout `c`: its init, wall and CPU (NaN when its host does not report CPU), ms. */
async function init(c: Checkout, role: string, i: number): Promise<[number, number]> {
  const bundle = c.bundles.find((b) => b.role === role)!;
  const options = { name: `${role}-${i}`, handlerModule: bundle.file, agentsModule: resolve(c.dir, "bench/lambda-agents.ts"), timeoutMs: 60_000, env: c.bundleEnv(bundle), log: () => {} };
  const fn = role === "http" ? new c.host.LocalFunctionUrl!(options) : new c.host.LocalFunction!(options);
  await (role === "http" ? fn.start!() : fn.warm!());
  const times: [number, number] = [fn.initMs[0]!, fn.initCpuMs?.[0] ?? Number.NaN];
  await fn.close();
  return times;
}

const a = await checkout(resolve(dirA));
const b = await checkout(resolve(dirB));
try {
  console.log(`init in the local function host, A = ${a.dir}, B = ${b.dir}, ${CONTAINERS} containers each, alternately; load average ${loadavg()[0]!.toFixed(1)}:`);
  for (const role of ROLES) {
    const times = { a: [] as [number, number][], b: [] as [number, number][] };
    for (let i = 0; i < CONTAINERS; i++) {
      times.a.push(await init(a, role, i));
      times.b.push(await init(b, role, i));
    }
    const show = (t: [number, number][]) => {
      const cpu = median(t.map(([, c]) => c));
      return `${median(t.map(([w]) => w)).toFixed(0)} ms${Number.isNaN(cpu) ? "" : ` (CPU ${cpu.toFixed(0)})`}`;
    };
    console.log(`  ${role}: A ${show(times.a)}, B ${show(times.b)}`);
  }
  console.log(`  load average at the end ${loadavg()[0]!.toFixed(1)}`);
} finally {
  a.removeBundles(a.bundles);
  b.removeBundles(b.bundles);
}
