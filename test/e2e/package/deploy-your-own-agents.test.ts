/**
 * The package as a user gets it: `npm pack`, the tarball installed with its peers into an app
 * outside the repository (a temporary directory), and that app built exactly as the deploy
 * guide's "Deploy your own agents" section says (its files are read from docs/guide/deploy-to-aws.md): type-checked for
 * ES2022, `cdk synth` offline, then the template and every asset's contents checked. Also: the
 * tarball holds the library and nothing of the dev tools, and `require()` loads every entry.
 *
 * Slow (a build, an install and four bundles): one file, generous timeouts. The install prefers
 * npm's cache (`--prefer-offline`), which the repository's own `npm ci` has filled.
 */
import { execFile, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const execFileAsync = promisify(execFile);
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const repoPackage = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as {
  name: string;
  version: string;
  license: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const MINUTE = 60_000;

/** The environment of every child: Node 22 first on PATH; nothing of the npm run that started the tests. */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_(package_|lifecycle_|config_(local_prefix|workspace))|^INIT_CWD$/.test(key)) continue;
    env[key] = value;
  }
  env.PATH = `${dirname(process.execPath)}:${process.env.PATH ?? ""}`;
  env.CDK_DISABLE_VERSION_CHECK = "1";
  env.CDK_DISABLE_CLI_TELEMETRY = "true";
  return env;
}

interface Run {
  code: number;
  stdout: string;
  /** stdout and stderr, for failure messages. */
  output: string;
}

async function run(cmd: string, args: string[], cwd: string, timeout = 10 * MINUTE, env: Record<string, string> = {}): Promise<Run> {
  try {
    const { stdout, stderr } = await execFileAsync(cmd, args, { cwd, env: { ...childEnv(), ...env }, timeout, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout, output: stdout + stderr };
  } catch (error) {
    const e = error as { code?: number | string; stdout?: string; stderr?: string; message?: string };
    const stdout = e.stdout ?? "";
    return { code: typeof e.code === "number" ? e.code : 1, stdout, output: `${e.message ?? ""}\n${stdout}${e.stderr ?? ""}` };
  }
}

interface ReadmeApp {
  /** Files by name, from the blocks the section introduces with a file name. */
  files: Map<string, string>;
  /** The shell lines of the section's bash blocks (continuations joined). */
  commands: string[];
}

/** The "Deploy your own agents" section of the deploy guide: its files and its commands. */
function readmeApp(): ReadmeApp {
  const readme = readFileSync(join(repoRoot, "docs/guide/deploy-to-aws.md"), "utf8");
  const start = readme.indexOf("\n## Deploy your own agents\n");
  expect(start, "the guide's section").toBeGreaterThan(0);
  const end = readme.indexOf("\n## ", start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const files = new Map<string, string>();
  const commands: string[] = [];
  const lines = section.split("\n");
  let paragraphStart = ""; // the first line of the last paragraph of prose
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\w+)$/.exec(lines[i]!);
    if (!fence) {
      if (lines[i]!.trim() !== "" && (i === 0 || lines[i - 1]!.trim() === "")) paragraphStart = lines[i]!;
      continue;
    }
    const body: string[] = [];
    for (i++; lines[i] !== "```"; i++) body.push(lines[i]!);
    if (fence[1] === "bash") {
      const joined = body.join("\n").replace(/\\\n\s*/g, " ").split("\n");
      commands.push(...joined.map((l) => l.replace(/\s+#.*$/, "").trim()).filter(Boolean));
      continue;
    }
    // A block is a file when the paragraph before it starts with `name.ext`.
    const name = /^`([\w.-]+\.(?:ts|json))`/.exec(paragraphStart)?.[1];
    expect(name, `the paragraph before a ${fence[1]} block names its file: ${paragraphStart}`).toBeDefined();
    files.set(name!, `${body.join("\n")}\n`);
  }
  return { files, commands };
}

/** `name` of the guide's install line → what the test installs: the tarball, or the version this repository pins. */
function installSpec(name: string, tarball: string): string {
  if (name === repoPackage.name) return tarball;
  const version = repoPackage.devDependencies[name];
  expect(version, `the deploy guide installs ${name}, which package.json does not pin`).toBeDefined();
  return `${name}@${version}`;
}

/** Every `.mjs` (or `.map`) file under `dir`. */
function filesOf(dir: string, ext: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(ext))
    .map((f) => join(dir, f));
}

/** The source files an asset was bundled from, as its source maps list them (paths relative to `root`). */
function bundledSources(assetDir: string, root: string): string[] {
  const sources = new Set<string>();
  for (const map of filesOf(assetDir, ".map")) {
    const parsed = JSON.parse(readFileSync(map, "utf8")) as { sources: string[] };
    for (const source of parsed.sources) sources.add(relative(root, normalize(join(dirname(map), source))));
  }
  return [...sources];
}

/** `node_modules/<name>` (scoped or not) and the path inside it, for a source under node_modules. */
function packageOf(source: string): { root: string; name: string; path: string } | undefined {
  const at = source.lastIndexOf("node_modules/");
  if (at < 0) return undefined;
  const parts = source.slice(at + "node_modules/".length).split("/");
  const length = parts[0]!.startsWith("@") ? 2 : 1;
  const name = parts.slice(0, length).join("/");
  return { root: source.slice(0, at) + `node_modules/${name}`, name, path: parts.slice(length).join("/") };
}

let work: string;
let app: string;
let tarball: string;
let tarballFiles: string[];
let readme: ReadmeApp;
const timings: Record<string, number> = {};

async function timed<T>(label: string, step: () => Promise<T>): Promise<T> {
  const started = Date.now();
  try {
    return await step();
  } finally {
    timings[label] = Date.now() - started;
  }
}

beforeAll(async () => {
  readme = readmeApp();
  work = mkdtempSync(join(tmpdir(), "harness-package-"));
  app = join(work, "my-agents");
  mkdirSync(app);

  // `npm pack` as a publish runs it: prepack builds dist/ from src/.
  const packed = await timed("npm pack (build included)", () => run("npm", ["pack", "--json", "--pack-destination", work], repoRoot));
  expect(packed.code, packed.output).toBe(0);
  const manifest = JSON.parse(packed.stdout.slice(packed.stdout.indexOf("[\n"))) as [{ filename: string; files: { path: string }[] }];
  tarball = join(work, manifest[0].filename);
  tarballFiles = manifest[0].files.map((f) => f.path);

  // The guide's commands, in a directory of its own; `npm install` gets the tarball and the
  // versions this repository tests with.
  for (const command of readme.commands) {
    if (/^(mkdir|cd) /.test(command)) continue;
    if (/^npx /.test(command)) continue; // run below, one by one, with assertions
    for (const step of command.split("&&").map((c) => c.trim())) {
      const [tool, sub, ...rest] = step.split(/\s+/);
      expect(tool, step).toBe("npm");
      const args =
        sub === "install"
          ? ["install", "--prefer-offline", "--no-audit", "--no-fund", ...rest.map((a) => (a.startsWith("-") ? a : installSpec(a, tarball)))]
          : [sub!, ...rest];
      const result = await timed(step, () => run("npm", args, app));
      expect(result.code, `${step}\n${result.output}`).toBe(0);
    }
  }
  for (const [name, text] of readme.files) writeFileSync(join(app, name), text);
}, 30 * MINUTE);

afterAll(() => {
  process.stderr.write(`package fixture timings (ms): ${JSON.stringify(timings)}\n`);
  if (work) rmSync(work, { recursive: true, force: true });
}, 10 * MINUTE); // removing an installed app's node_modules takes minutes on a loaded disk

describe("the packed tarball", () => {
  it("holds the library, its LICENSE and README, and nothing of the dev tools, tests or examples", () => {
    expect(tarballFiles).toContain("LICENSE");
    expect(tarballFiles).toContain("README.md");
    expect(tarballFiles).toContain("package.json");
    for (const f of tarballFiles.filter((f) => !["LICENSE", "README.md", "package.json", "bin/harness.js"].includes(f))) {
      expect(f.startsWith("dist/") || f.startsWith("templates/init/"), f).toBe(true);
      expect(f, f).not.toMatch(/\.test\.|local-cloud|^dist\/(src|dev|test|bench|examples|scripts|tools)\//);
    }
    for (const role of ["http", "worker", "dlq", "sweeper"]) expect(tarballFiles).toContain(`dist/lambda/${role}.js`);
    expect(tarballFiles).toContain("dist/cdk/index.js");
    expect(tarballFiles).toContain("dist/cdk/index.d.ts");
    const license = readFileSync(join(repoRoot, "LICENSE"), "utf8");
    expect(repoPackage.license).toBe("MIT");
    expect(license).toMatch(/^MIT License\n\nCopyright \(c\) \d{4} the resolute-harness authors\n/);
  });
});

describe("an app of your own (the deploy guide: Deploy your own agents)", () => {
  it("has the guide's files: agents.ts, app.ts, cdk.json, tsconfig.json", () => {
    expect([...readme.files.keys()].sort()).toEqual(["agents.ts", "app.ts", "cdk.json", "tsconfig.json"]);
    expect(readme.commands).toEqual(expect.arrayContaining(["npx tsc", "npx cdk synth", "npx cdk deploy"]));
    expect(JSON.parse(readme.files.get("tsconfig.json")!).compilerOptions.target).toBe("ES2022");
  });

  it("loads every entry with require() on Node 22 (CommonJS callers)", async () => {
    const entries = ["", "/memory", "/sqlite", "/dynamodb", "/sqs", "/http", "/server", "/client", "/cdk"].map((s) => `resolute-harness${s}`);
    const script = `
      const loaded = {};
      for (const name of ${JSON.stringify(entries)}) loaded[name] = Object.keys(require(name)).length;
      const { createRuntime } = require("resolute-harness");
      const { Harness } = require("resolute-harness/cdk");
      console.log(JSON.stringify({ loaded, createRuntime: typeof createRuntime, Harness: typeof Harness }));`;
    const result = await run(process.execPath, ["--disable-warning=ExperimentalWarning", "-e", script], app);
    expect(result.code, result.output).toBe(0);
    const out = JSON.parse(result.output.trim().split("\n").pop()!) as { loaded: Record<string, number>; createRuntime: string; Harness: string };
    for (const name of entries) expect(out.loaded[name], name).toBeGreaterThan(0);
    expect(out.createRuntime).toBe("function");
    expect(out.Harness).toBe("function");
  });

  it("type-checks for ES2022 (npx tsc, as the guide says)", async () => {
    const result = await timed("tsc", () => run(join(app, "node_modules/.bin/tsc"), ["-p", "."], app));
    expect(result.code, result.output).toBe(0);
  }, 15 * MINUTE);

  describe("cdk synth, offline", () => {
    let out: string;
    let template: { Resources: Record<string, { Type: string; Properties: Record<string, any>; DeletionPolicy?: string }> };
    const assetOf: Record<string, string> = {};

    beforeAll(async () => {
      out = join(app, "cdk.out");
      const result = await timed("cdk synth", () => run(join(app, "node_modules/.bin/cdk"), ["synth", "--quiet", "--no-notices"], app));
      expect(result.code, result.output).toBe(0);
      template = JSON.parse(readFileSync(join(out, "MyAgents.template.json"), "utf8"));
      for (const [id, r] of Object.entries(template.Resources)) {
        const role = /^Harness(Http|Worker|Dlq|Sweeper)Function/.exec(id)?.[1]?.toLowerCase();
        if (r.Type === "AWS::Lambda::Function" && role) assetOf[role] = join(out, `asset.${String(r.Properties.Code.S3Key).replace(/\.zip$/, "")}`);
      }
    }, 15 * MINUTE);

    const resources = (type: string) => Object.values(template.Resources).filter((r) => r.Type === type);

    it("deploys four Node 22 functions with the props the app sets", () => {
      expect(Object.keys(assetOf).sort()).toEqual(["dlq", "http", "sweeper", "worker"]);
      for (const fn of resources("AWS::Lambda::Function")) expect(fn.Properties.Runtime).toBe("nodejs22.x");
      const byRole = (role: string) =>
        Object.entries(template.Resources).find(([id, r]) => r.Type === "AWS::Lambda::Function" && id.toLowerCase().startsWith(`harness${role}function`))![1];
      // The worker and the dlq function share one asset, each with its own entry file.
      for (const role of ["http", "sweeper"]) expect(byRole(role).Properties.Handler, role).toBe("index.handler");
      for (const role of ["worker", "dlq"]) expect(byRole(role).Properties.Handler, role).toBe(`${role}.handler`);
      expect(assetOf.dlq).toBe(assetOf.worker);
      expect(byRole("worker").Properties.ReservedConcurrentExecutions).toBe(20);
      expect(byRole("http").Properties.Environment.Variables.HARNESS_CORS_ORIGINS).toBe("https://app.example.com");
      expect(resources("AWS::Lambda::Url")[0]!.Properties.Cors.AllowOrigins).toEqual(["https://app.example.com"]);
      for (const logs of resources("AWS::Logs::LogGroup")) expect(logs.Properties.RetentionInDays).toBe(90);
      for (const type of ["AWS::DynamoDB::GlobalTable", "AWS::S3::Bucket"]) {
        for (const r of resources(type)) expect(r.DeletionPolicy, type).toBe("Retain");
      }
      const alarms = resources("AWS::CloudWatch::Alarm");
      expect(alarms.length).toBeGreaterThanOrEqual(3);
      for (const alarm of alarms) expect(JSON.stringify(alarm.Properties.AlarmActions)).toContain("Alarms");
    });

    it("bundles exactly one copy of the harness, and of each of its dependencies, in each asset", () => {
      for (const [role, dir] of Object.entries(assetOf)) {
        const sources = bundledSources(dir, app);
        // Everything comes from the app's node_modules, except the app's own agents module.
        const outside = sources.filter((s) => !s.startsWith("node_modules/"));
        expect(outside, role).toEqual(role === "worker" || role === "dlq" ? ["agents.ts"] : []);
        // The harness and each of its dependencies (pi-ai, ajv, …) from one installation: no
        // module of theirs bundled from two places. (Other packages may legitimately come in two
        // versions, e.g. two AWS SDK releases' @smithy helpers.)
        const ours = new Set([repoPackage.name, ...Object.keys(repoPackage.dependencies)]);
        const roots = new Map<string, Set<string>>();
        for (const source of sources) {
          const pkg = packageOf(source);
          if (pkg && ours.has(pkg.name)) roots.set(pkg.name, (roots.get(pkg.name) ?? new Set()).add(pkg.root));
        }
        const twice = [...roots].filter(([, where]) => where.size > 1).map(([name, where]) => `${name}: ${[...where].join(", ")}`);
        expect(twice, role).toEqual([]);
        for (const name of ["@earendil-works/pi-ai", "@earendil-works/pi-agent-core"]) expect(roots.has(name), `${role}: ${name}`).toBe(true);
        const harness = sources.filter((s) => s.startsWith("node_modules/resolute-harness/"));
        expect(harness.filter((s) => s === `node_modules/resolute-harness/dist/lambda/${role}.js`), role).toHaveLength(1);
        expect(harness.every((s) => s.startsWith("node_modules/resolute-harness/dist/")), role).toBe(true);
        expect(harness.filter((s) => s.endsWith("/runtime/runtime.js")), role).toHaveLength(1);
      }
    });

    it("gives the worker the agents module with its observers, and http and sweeper only the names", () => {
      const code = (role: string) => filesOf(assetOf[role]!, ".mjs").map((f) => readFileSync(f, "utf8")).join("\n");
      for (const role of ["worker", "dlq"]) {
        const all = code(role);
        expect(all.includes("Answers for one workspace, and tells the time."), role).toBe(true);
        expect(all.includes('"settled"'), `${role}: the module's observer`).toBe(true);
      }
      for (const role of ["http", "sweeper"]) {
        expect(code(role).includes("Answers for one workspace, and tells the time."), role).toBe(false);
        const fn = Object.entries(template.Resources).find(
          ([id, r]) => r.Type === "AWS::Lambda::Function" && id.toLowerCase().startsWith(`harness${role}function`),
        )![1];
        expect(fn.Properties.Environment.Variables.HARNESS_AGENT_NAMES, role).toBe("assistant");
      }
    });
  });
});

/**
 * A process of the app started the way a user starts it (`npm start`, `npm run dev`), resolved
 * once it prints the line `ready` matches; killed (its process group) by `stop`.
 */
async function startApp(
  cwd: string,
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
): Promise<{ match: RegExpExecArray; pid: number; output(): string; stop(signal?: NodeJS.Signals): Promise<number | null>; exited: Promise<number | null> }> {
  const proc = spawn("npm", args, { cwd, env: { ...childEnv(), ...env }, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let out = "";
  proc.stdout!.on("data", (d) => (out += d));
  proc.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => proc.on("exit", (code) => resolve(code)));
  const stop = async (signal: NodeJS.Signals = "SIGTERM") => {
    try {
      process.kill(-proc.pid!, signal);
    } catch {
      // gone already
    }
    return await exited;
  };
  const deadline = Date.now() + 2 * MINUTE;
  for (;;) {
    const match = ready.exec(out);
    if (match) return { match, pid: proc.pid!, output: () => out, stop, exited };
    if (proc.exitCode !== null || Date.now() > deadline) {
      await stop("SIGKILL");
      throw new Error(`npm ${args.join(" ")} did not come up:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The process of `group` (a process group's id) whose argv `matches`: the server under `npm start`,
 * so a stop can go to it alone (npm, signalled itself, dies of the signal and hides the server's
 * exit status; signalled through its child, it exits with the child's status).
 */
function groupMember(group: number, matches: (argv: string[]) => boolean): number | undefined {
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const pgrp = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
      if (pgrp === group && matches(argv)) return Number(pid);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

/** A free port on 127.0.0.1. */
async function freePort(): Promise<number> {
  const { createServer } = await import("node:net");
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe("npm run build keeps the bin executable", () => {
  it("dist/cli/main.js has its execute bits, and npx harness runs in the repository", async () => {
    expect(statSync(join(repoRoot, "dist/cli/main.js")).mode & 0o111).toBe(0o111);
    const version = await run("npx", ["--no-install", "harness", "--version"], repoRoot);
    expect(version.code, version.output).toBe(0);
    expect(version.stdout).toBe(`${repoPackage.version}\n`);
  });
});

describe("harness init --aws (from the packed tarball) into an empty folder", () => {
  let project: string;

  beforeAll(async () => {
    project = join(work, "scaffolded");
    // The harness bin the README app installed from the tarball.
    const init = await timed("harness init", () => run(join(app, "node_modules/.bin/harness"), ["init", "--aws", "scaffolded"], work));
    expect(init.code, init.output).toBe(0);
    expect(init.stdout).toContain("Created scaffolded: .env.example, .gitignore, README.md, agents.ts, app.ts, cdk.json, main.ts, package.json, tsconfig.json");
    // The package is not on the registry: its pinned version is satisfied by the tarball.
    const install = await timed("npm install (init)", () => run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", tarball], project));
    expect(install.code, install.output).toBe(0);
  }, 30 * MINUTE);

  it("writes a module package with the Node floor the harness needs, and refuses to overwrite it", async () => {
    const pkg = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as { type: string; engines: { node: string }; scripts: Record<string, string>; dependencies: Record<string, string>; devDependencies: Record<string, string> };
    expect(pkg.type).toBe("module");
    expect(pkg.engines.node).toBe(">=22.19.0");
    expect(pkg.scripts).toMatchObject({ start: "node main.ts", dev: "harness dev", typecheck: "tsc" });
    expect(pkg.dependencies["resolute-harness"]).toMatch(/^file:/); // npm install <tarball> wrote it
    for (const name of ["aws-cdk-lib", "constructs", "esbuild"]) expect(pkg.devDependencies[name]).toBe(repoPackage.devDependencies[name]);
    const cdk = JSON.parse(readFileSync(join(project, "cdk.json"), "utf8")) as { app: string; context: Record<string, unknown> };
    expect(cdk.app).toBe("node app.ts");
    const again = await run(join(app, "node_modules/.bin/harness"), ["init", "--aws", "scaffolded"], work);
    expect(again.code).toBe(2);
    expect(again.output).toContain("error: scaffolded already has");
  });

  it("type-checks with tsc --strict (npm run typecheck)", async () => {
    const tsconfig = JSON.parse(readFileSync(join(project, "tsconfig.json"), "utf8")) as { compilerOptions: { strict: boolean } };
    expect(tsconfig.compilerOptions.strict).toBe(true);
    const result = await timed("tsc (init)", () => run("npm", ["run", "typecheck"], project));
    expect(result.code, result.output).toBe(0);
  }, 15 * MINUTE);

  it("npm start: a reply over HTTP, the chat page, no warning, a clean stop", async () => {
    const port = await freePort();
    const server = await startApp(project, ["start"], { PORT: String(port) }, /listening on (http:\/\/\S+)/);
    try {
      const url = server.match[1]!;
      expect(url).toBe(`http://127.0.0.1:${port}`);
      const res = await fetch(`${url}/agents/assistant/demo?wait=true`, { method: "POST", body: JSON.stringify({ kind: "user", body: "what time is it?" }) });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ status: "succeeded" });
      const stream = await (await fetch(`${url}/agents/assistant/demo`)).text();
      expect(stream).toContain('"toolName":"clock"');
      expect(stream).toMatch(/The time is \d{4}-/);
      const page = await fetch(`${url}/`);
      expect(await page.text()).toContain("<title>resolute-harness chat</title>");
      expect((await fetch(`${url}/chat.js`)).status).toBe(200);
      // Started again on the same port: one line naming it and PORT=, exit 1.
      const busy = await run("npm", ["start"], project, MINUTE, { PORT: String(port) });
      expect(busy.code).toBe(1);
      expect(busy.output).toContain(`port ${port} on 127.0.0.1 is already in use (another server, or an earlier run of this one, listens there): stop it, or start with PORT=<another port> (PORT=0 picks a free one)`);
      expect(busy.output).not.toMatch(/\n\s+at /);
    } finally {
      // SIGTERM to the server (as a container runtime sends it): it closes and exits 0, which npm
      // passes on as its own status.
      const node = groupMember(server.pid, (argv) => /(^|\/)node$/.test(argv[0] ?? "") && argv.at(-1) === "main.ts");
      if (node === undefined) await server.stop("SIGKILL");
      expect(node, "the node process running main.ts under npm start").toBeDefined();
      process.kill(node!, "SIGTERM");
      expect(await server.exited).toBe(0);
    }
    expect(server.output()).not.toMatch(/ExperimentalWarning|SQLite is an experimental/);
  }, 5 * MINUTE);

  it("npm run dev: the chat page and the agents from the package's built dev server", async () => {
    const port = await freePort();
    const dev = await startApp(project, ["run", "dev"], { PORT: String(port) }, /harness dev · (http:\/\/\S+)/);
    try {
      const url = dev.match[1]!;
      expect(await (await fetch(`${url}/chat-config.json`)).json()).toEqual({ agents: ["assistant"] });
      const js = await (await fetch(`${url}/chat.js`)).text();
      expect(js.startsWith("/*! Licenses of the libraries bundled here: /chat.js.LICENSE.txt */")).toBe(true);
      const res = await fetch(`${url}/agents/assistant/dev?wait=true`, { method: "POST", body: JSON.stringify({ kind: "user", body: "hello" }) });
      expect(await res.json()).toMatchObject({ status: "succeeded" });
    } finally {
      await dev.stop("SIGINT");
    }
    expect(dev.output()).not.toMatch(/ExperimentalWarning/);
  }, 5 * MINUTE);

  it("npx cdk synth: the template and the four function bundles, offline", async () => {
    const result = await timed("cdk synth (init)", () => run(join(project, "node_modules/.bin/cdk"), ["synth", "--quiet", "--no-notices"], project));
    expect(result.code, result.output).toBe(0);
    const template = JSON.parse(readFileSync(join(project, "cdk.out", "Scaffolded.template.json"), "utf8")) as { Resources: Record<string, { Type: string }> };
    const functions = Object.entries(template.Resources).filter(([id, r]) => r.Type === "AWS::Lambda::Function" && /^Harness(Http|Worker|Dlq|Sweeper)Function/.test(id));
    expect(functions).toHaveLength(4);
  }, 15 * MINUTE);
});
