import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import { EXIT, usageError, type CliIo } from "./cli-io.ts";

/** The project `harness init` writes: the package's `templates/init/` (two folders up in src/ and dist/ alike). */
const TEMPLATES = fileURLToPath(new URL("../../templates/init/", import.meta.url));
const PACKAGE_JSON = fileURLToPath(new URL("../../package.json", import.meta.url));

/** The harness's own folder: a checkout when this file is the TypeScript source, the installed package otherwise. */
const PACKAGE_ROOT = fileURLToPath(new URL("../../", import.meta.url));
const FROM_CHECKOUT = import.meta.url.endsWith(".ts");

/** Template file → the name it gets in the project (npm would not pack the dotted names). */
const RENAMED: Record<string, string> = { gitignore: ".gitignore", "env.example": ".env.example" };
/** The files only `--aws` writes: the CDK app. */
const AWS_FILES = new Set(["app.ts", "cdk.json"]);

/** What every project develops with, at the versions this release is tested with: TypeScript to check it. */
const DEV_DEPENDENCIES = ["typescript", "@types/node"];
/**
 * What `--aws` adds, as dev dependencies (they synthesize and bundle; nothing of them runs in
 * `npm start`): the construct's peers (the CDK, the bundler, the AWS SDK clients and Powertools
 * its functions are bundled with) and the CDK CLI. About 300 MB, so a project has them only when
 * it deploys (ADR 0056).
 */
const AWS_DEV_DEPENDENCIES = [
  "aws-cdk-lib",
  "constructs",
  "esbuild",
  "@aws-sdk/client-dynamodb",
  "@aws-sdk/lib-dynamodb",
  "@aws-sdk/client-s3",
  "@aws-sdk/client-sqs",
  "@aws-lambda-powertools/logger",
  "@aws-lambda-powertools/metrics",
  "aws-cdk",
];

/** `harness init`'s options. */
export interface InitOptions {
  name?: string;
  aws?: boolean;
}

interface HarnessPackage {
  name: string;
  version: string;
  engines: { node: string };
  devDependencies: Record<string, string>;
}

/**
 * `harness init [dir]`: a project that runs as it is: `npm install`, then `npm run dev` (the agents
 * with a chat page, reloading on save), `npm start` and `npm run typecheck` (tsc --strict); with
 * `--aws`, a CDK app too (`npx cdk synth` / `deploy`). It refuses to overwrite files of a folder
 * that has them. Run from a checkout of the repository (`npm run harness -- init ../my-agents`),
 * it packs the checkout into the project's `vendor/` and depends on that tarball, so the project
 * installs without the registry.
 */
export function registerInitCommand(program: Command, io: CliIo, done: (status: number) => void): void {
  program
    .command("init")
    .description("create a project: agents.ts (a keyless agent with a tool), main.ts, package.json, tsconfig.json, .env.example, README; --aws adds a CDK app")
    .argument("[dir]", "the folder to create it in (created if missing)", ".")
    .option("--name <name>", "the package name (default: the folder's name)")
    .option("--aws", "add the AWS deployment: app.ts, cdk.json and the CDK's packages (about 300 MB more in node_modules)")
    .action((dir: string, opts: InitOptions) => {
      done(initProject(dir, opts, io, FROM_CHECKOUT ? PACKAGE_ROOT : undefined));
    });
}

/**
 * Writes the project into `dir`; with `checkout` (the repository's folder), packs it into the
 * project's vendor/ and depends on that tarball, else on this release's version.
 */
export function initProject(dir: string, opts: InitOptions, io: CliIo, checkout?: string): number {
  const target = resolve(dir);
  const name = opts.name ?? packageName(basename(target));
  if (!/^(?:@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/.test(name) || name.length > 214) {
    throw usageError("name", `${opts.name !== undefined ? "--name" : "the folder's name"} ${JSON.stringify(name)} is not an npm package name: pass --name <lowercase-name>`);
  }
  const harness = JSON.parse(readFileSync(PACKAGE_JSON, "utf8")) as HarnessPackage;
  const aws = opts.aws === true;
  const files = new Map<string, string>();
  for (const file of readdirSync(TEMPLATES)) {
    if (AWS_FILES.has(file) && !aws) continue;
    const text = readFileSync(join(TEMPLATES, file), "utf8").replaceAll("__NAME__", name).replaceAll("__STACK__", stackName(name));
    files.set(RENAMED[file] ?? file, sections(text, aws));
  }
  // From a checkout, the package is the tarball packed into vendor/ (not on the registry yet).
  const tarball = checkout !== undefined ? `vendor/${harness.name.replace(/^@/, "").replace("/", "-")}-${harness.version}.tgz` : undefined;
  files.set("package.json", `${JSON.stringify(projectPackage(name, harness, aws, tarball), null, 2)}\n`);

  const taken = [...files.keys()].filter((file) => existsSync(join(target, file)));
  if (taken.length > 0) {
    throw usageError(
      "init",
      `${shown(target)} already has ${taken.join(", ")}: harness init writes a new project and overwrites nothing; pick a new folder (harness init my-agents)`,
    );
  }
  mkdirSync(target, { recursive: true });
  if (tarball !== undefined && checkout !== undefined) {
    // Packed before the project's files are written: a failed build leaves no project that cannot install.
    io.stdout.write(`Packing ${harness.name} from the checkout at ${shown(checkout)} into ${shown(join(target, tarball))} (npm pack builds it first: a minute or two)\n`);
    mkdirSync(join(target, "vendor"), { recursive: true });
    try {
      // npm pack's prepack builds dist/; its output (and the build's) goes to stderr, so that
      // stdout stays the summary below.
      execFileSync("npm", ["pack", "--pack-destination", join(target, "vendor"), "--silent"], { cwd: checkout, stdio: ["ignore", 2, "inherit"] });
    } catch (err) {
      const status = (err as { status?: number | null }).status;
      io.stderr.write(`error: npm pack in ${checkout} failed${status != null ? ` (exit ${status})` : ""}: its output is above; is \`npm ci\` done in the checkout?\n`);
      return EXIT.settledFailed;
    }
    files.set(tarball, "");
  }
  for (const [file, text] of files) if (file !== tarball) writeFileSync(join(target, file), text);

  const rel = relative(process.cwd(), target);
  const cd = rel.startsWith("..") ? target : rel;
  const [major, minor] = process.versions.node.split(".").map(Number) as [number, number];
  const oldNode = major < 22 || (major === 22 && minor < 19);
  io.stdout.write(
    `Created ${shown(target)}: ${[...files.keys()].sort().join(", ")}
Next:
${cd === "" ? "" : `  cd ${cd.includes(" ") ? JSON.stringify(cd) : cd}\n`}  npm install
  npm run dev        # your agents and a chat page on http://127.0.0.1:8484; saving a file reloads
Then: npm start (the server alone), npm run typecheck${aws ? ", npx cdk synth, npx cdk deploy" : " (harness init --aws: a project with a CDK app for AWS)"}. README.md has more.
${oldNode ? `Note: the project needs Node ${harness.engines.node.replace(">=", "")} or newer; this is ${process.versions.node}.\n` : ""}`,
  );
  return EXIT.ok;
}

function projectPackage(name: string, harness: HarnessPackage, aws: boolean, tarball: string | undefined): Record<string, unknown> {
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
      ...(aws ? { synth: "cdk synth", deploy: "cdk deploy" } : {}),
    },
    dependencies: { [harness.name]: tarball !== undefined ? `file:${tarball}` : harness.version },
    devDependencies: Object.fromEntries(Object.entries(pinned([...DEV_DEPENDENCIES, ...(aws ? AWS_DEV_DEPENDENCIES : [])])).sort(([a], [b]) => a.localeCompare(b))),
  };
}

/**
 * A template's text for this project: the lines between `<!-- aws -->` and `<!-- /aws -->` (or
 * `// aws{` and `// }aws`) kept only with `--aws`, those between `<!-- local -->` and
 * `<!-- /local -->` only without; the marker lines themselves dropped.
 */
function sections(text: string, aws: boolean): string {
  const out: string[] = [];
  let keep = true;
  for (const line of text.split("\n")) {
    const marker = /^\s*(?:<!-- (\/?)(aws|local) -->|\/\/ (aws)\{|\/\/ \}(aws))\s*$/.exec(line);
    if (!marker) {
      if (keep) out.push(line);
      continue;
    }
    const closing = marker[1] === "/" || marker[4] !== undefined;
    const section = marker[2] ?? marker[3] ?? marker[4];
    keep = closing ? true : (section === "aws") === aws;
  }
  return out.join("\n");
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
