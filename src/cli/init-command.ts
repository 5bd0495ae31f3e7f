import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import { EXIT, usageError, type CliIo } from "./cli-io.ts";

/** The project `harness init` writes: the package's `templates/init/` (two folders up in src/ and dist/ alike). */
const TEMPLATES = fileURLToPath(new URL("../../templates/init/", import.meta.url));
const PACKAGE_JSON = fileURLToPath(new URL("../../package.json", import.meta.url));

/** Template file → the name it gets in the project (npm would not pack the dotted names). */
const RENAMED: Record<string, string> = { gitignore: ".gitignore", "env.example": ".env.example" };

/**
 * What the project installs beside the harness, at the versions this release is tested with: the
 * construct's peers (the CDK, the bundler, the AWS SDK clients and Powertools its functions run
 * with), and the CDK CLI and TypeScript to check and deploy it.
 */
const DEPENDENCIES = [
  "aws-cdk-lib",
  "constructs",
  "esbuild",
  "@aws-sdk/client-dynamodb",
  "@aws-sdk/lib-dynamodb",
  "@aws-sdk/client-s3",
  "@aws-sdk/client-sqs",
  "@aws-lambda-powertools/logger",
  "@aws-lambda-powertools/metrics",
];
const DEV_DEPENDENCIES = ["aws-cdk", "typescript", "@types/node"];

interface HarnessPackage {
  name: string;
  version: string;
  engines: { node: string };
  devDependencies: Record<string, string>;
}

/**
 * `harness init [dir]`: a project that runs as it is: `npm install`, then `npm run dev` (the agents
 * with a chat page, reloading on save), `npm start`, `npm run typecheck` (tsc --strict) and
 * `npx cdk synth` / `deploy`. It refuses to overwrite files of a folder that has them.
 */
export function registerInitCommand(program: Command, io: CliIo, done: (status: number) => void): void {
  program
    .command("init")
    .description("create a project: agents.ts (a keyless agent with a tool), main.ts, a CDK app, package.json, tsconfig.json, .env.example, README")
    .argument("[dir]", "the folder to create it in (created if missing)", ".")
    .option("--name <name>", "the package name (default: the folder's name)")
    .action((dir: string, opts: { name?: string }) => {
      done(init(dir, opts, io));
    });
}

function init(dir: string, opts: { name?: string }, io: CliIo): number {
  const target = resolve(dir);
  const name = opts.name ?? packageName(basename(target));
  if (!/^(?:@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/.test(name) || name.length > 214) {
    throw usageError("name", `${opts.name !== undefined ? "--name" : "the folder's name"} ${JSON.stringify(name)} is not an npm package name: pass --name <lowercase-name>`);
  }
  const harness = JSON.parse(readFileSync(PACKAGE_JSON, "utf8")) as HarnessPackage;
  const files = new Map<string, string>();
  for (const file of readdirSync(TEMPLATES)) {
    const text = readFileSync(join(TEMPLATES, file), "utf8").replaceAll("__NAME__", name).replaceAll("__STACK__", stackName(name));
    files.set(RENAMED[file] ?? file, text);
  }
  files.set("package.json", `${JSON.stringify(projectPackage(name, harness), null, 2)}\n`);

  const taken = [...files.keys()].filter((file) => existsSync(join(target, file)));
  if (taken.length > 0) {
    throw usageError(
      "init",
      `${shown(target)} already has ${taken.join(", ")}: harness init writes a new project and overwrites nothing; pick a new folder (harness init my-agents)`,
    );
  }
  mkdirSync(target, { recursive: true });
  for (const [file, text] of files) writeFileSync(join(target, file), text);

  const rel = relative(process.cwd(), target);
  const cd = rel.startsWith("..") ? target : rel;
  const [major, minor] = process.versions.node.split(".").map(Number) as [number, number];
  const oldNode = major < 22 || (major === 22 && minor < 19);
  io.stdout.write(
    `Created ${shown(target)}: ${[...files.keys()].sort().join(", ")}
Next:
${cd === "" ? "" : `  cd ${cd.includes(" ") ? JSON.stringify(cd) : cd}\n`}  npm install
  npm run dev        # your agents and a chat page on http://127.0.0.1:8484; saving a file reloads
Then: npm start (the server alone), npm run typecheck, npx cdk synth, npx cdk deploy. README.md has more.
${oldNode ? `Note: the project needs Node ${harness.engines.node.replace(">=", "")} or newer; this is ${process.versions.node}.\n` : ""}`,
  );
  return EXIT.ok;
}

function projectPackage(name: string, harness: HarnessPackage): Record<string, unknown> {
  const pinned = (names: string[]) => Object.fromEntries(names.map((n) => [n, harness.devDependencies[n] ?? "latest"]));
  return {
    name,
    version: "0.1.0",
    private: true,
    type: "module",
    engines: { node: harness.engines.node },
    scripts: {
      dev: "harness dev",
      start: "node main.ts",
      typecheck: "tsc",
      synth: "cdk synth",
      deploy: "cdk deploy",
    },
    dependencies: { [harness.name]: harness.version, ...pinned(DEPENDENCIES) },
    devDependencies: pinned(DEV_DEPENDENCIES),
  };
}

/** A folder's name as an npm package name: lowercase, with what npm refuses replaced. */
function packageName(folder: string): string {
  const name = folder.toLowerCase().replace(/[^a-z0-9._~-]+/g, "-").replace(/^[._~-]+/, "");
  return name === "" ? "my-agents" : name;
}

/** The CloudFormation stack's name: the package name in PascalCase (`my-agents` → `MyAgents`). */
function stackName(name: string): string {
  const words = name.replace(/^@[^/]+\//, "").split(/[^A-Za-z0-9]+/).filter(Boolean);
  const pascal = words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join("");
  return /^[A-Za-z]/.test(pascal) ? pascal : `Agents${pascal}`;
}

function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel === "" ? "this folder" : rel.startsWith("..") ? path : rel;
}
