/**
 * `npm run rehearse -- --app "<cdk app command>"` or `-- --template <cdk.out directory>`: the
 * deploy, rehearsed on this machine before `cdk deploy`. Synthesizes the app (or takes an
 * assembly already synthesized), starts DynamoDB Local and fauxqs, brings the stack up from its
 * template with IAM enforced (each function's calls checked against its role's policy), runs a
 * smoke conversation through the function URL (`dev/local-cloud/rehearsal.ts`), and prints what
 * passed, what failed (an AccessDenied names the function, the action and the resource) and what
 * the template asks that the rehearsal cannot check. Exits 1 when anything failed.
 *
 * Options: --stack <name> (an assembly of several stacks), --context key=value (repeatable),
 * --secret <ssm name or secret ARN>=<value> (repeatable: the values the stack's secret
 * references resolve to), --token <bearer> (sent with every request, for `urlAuthType: NONE`
 * with a token).
 */
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { synthesize } from "../dev/local-cloud/cloud-assembly.ts";
import { startLocalCloud } from "../dev/local-cloud/local-cloud.ts";
import { formatRehearsal, rehearse } from "../dev/local-cloud/rehearsal.ts";
import { startEmulators } from "../test/support/emulators.ts";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const { values } = parseArgs({
  options: {
    app: { type: "string" },
    template: { type: "string" },
    stack: { type: "string" },
    context: { type: "string", multiple: true },
    secret: { type: "string", multiple: true },
    token: { type: "string" },
  },
});
const pairs = (list: string[] | undefined, what: string) =>
  Object.fromEntries(
    (list ?? []).map((p) => {
      const i = p.lastIndexOf("=");
      if (i <= 0) fail(`--${what} expects name=value, got ${p}`);
      return [p.slice(0, i), p.slice(i + 1)];
    }),
  );
if (!values.app === !values.template) fail('give one of --app "<cdk app command>" or --template <cdk.out directory>');

const assembly = values.template
  ? resolve(values.template)
  : (() => {
      process.stdout.write(`synthesizing ${values.app} …\n`);
      return synthesize({ app: values.app!, context: pairs(values.context, "context"), outdir: mkdtempSync(join(tmpdir(), "harness-rehearsal-")) });
    })();
const emulators = await startEmulators();
Object.assign(process.env, emulators.env);
let code = 1;
try {
  const logs: string[] = [];
  const cloud = await startLocalCloud({
    assembly,
    stackName: values.stack,
    iam: true,
    secrets: pairs(values.secret, "secret"),
    sweeperRateMs: false,
    env: { POWERTOOLS_LOG_LEVEL: "WARN" },
    log: (line, source) => logs.push(`[${source}] ${line}`),
  });
  try {
    const result = await rehearse(cloud, { headers: values.token ? { authorization: `Bearer ${values.token}` } : {} });
    process.stdout.write(`${formatRehearsal(result, cloud.notEmulated)}\n`);
    if (!result.ok) process.stdout.write(`\nlast function output:\n${logs.slice(-40).join("\n")}\n`);
    code = result.ok ? 0 : 1;
  } finally {
    await cloud.stop();
  }
} catch (err) {
  process.stderr.write(`rehearse: ${err instanceof Error ? err.message : String(err)}\n`);
} finally {
  await emulators.stop();
}
process.exit(code);

function fail(message: string): never {
  process.stderr.write(`rehearse: ${message}\n`);
  process.exit(2);
}
