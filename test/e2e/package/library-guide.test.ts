/**
 * The library guide's program (docs/guide/library.md, "Use it as a library"), exactly as written:
 * extracted from the guide, type-checked, then run as `node main.ts` in a folder of its own, with the package's
 * subpath imports (`resolute-harness/...`) resolved to this repository's sources the way
 * package.json's `exports` resolve them to `dist/`.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import ts from "typescript";
import { afterAll, expect, it } from "vitest";

const root = join(import.meta.dirname, "../../..");
const dir = mkdtempSync(join(tmpdir(), "library-guide-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The first `ts` block under the heading. */
function snippet(heading: string): string {
  const readme = readFileSync(join(root, "docs/guide/library.md"), "utf8");
  const section = readme.slice(readme.indexOf(`\n${heading}\n`));
  const block = /```ts\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error(`no ts block under ${heading}`);
  return block[1]!;
}

/** `resolute-harness[/subpath]` → the source file its `exports` entry is built from. */
function packageSources(): Record<string, string> {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { name: string; exports: Record<string, { import: string }> };
  return Object.fromEntries(
    Object.entries(pkg.exports).map(([entry, target]) => [
      entry === "." ? pkg.name : `${pkg.name}/${entry.slice(2)}`,
      join(root, target.import.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts")),
    ]),
  );
}

/**
 * The snippet's own type errors. The model SDKs' declarations (megabytes, reached through the
 * lazily loaded providers) are read as empty modules: the snippet's types never come from them,
 * and parsing them would take most of the check's time.
 */
function typeErrors(file: string, sources: Record<string, string>): string[] {
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2023,
    lib: ["lib.es2023.d.ts"],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    allowImportingTsExtensions: true,
    erasableSyntaxOnly: true,
    verbatimModuleSyntax: true,
    types: ["node"],
    typeRoots: [join(root, "node_modules/@types")],
    paths: Object.fromEntries(Object.entries(sources).map(([name, path]) => [name, [path]])),
  };
  const host = ts.createCompilerHost(options);
  const sdk = /\/node_modules\/(openai|@anthropic-ai|@google\/genai|@aws-sdk|@smithy|@mistralai)\//;
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (name, language, ...rest) => (sdk.test(name) ? ts.createSourceFile(name, "export {};", language) : read(name, language, ...rest));
  const program = ts.createProgram([file], options, host);
  const main = program.getSourceFile(file)!;
  return [...program.getOptionsDiagnostics(), ...program.getSyntacticDiagnostics(main), ...program.getSemanticDiagnostics(main)].map(
    (d) => `${d.file ? `${d.file.fileName}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1} ` : ""}${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`,
  );
}

it("the library guide's program type-checks and runs as written", async () => {
  const code = snippet("## Use it as a library");
  const sources = packageSources();
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "my-app", private: true, type: "module" }));
  writeFileSync(join(dir, "main.ts"), code);
  const urls = Object.fromEntries(Object.entries(sources).map(([name, path]) => [name, pathToFileURL(path).href]));
  writeFileSync(
    join(dir, "resolve-package.mjs"),
    `import { registerHooks } from "node:module";
const sources = ${JSON.stringify(urls)};
registerHooks({
  resolve(specifier, context, next) {
    return specifier in sources ? { url: sources[specifier], shortCircuit: true } : next(specifier, context);
  },
});
`,
  );

  expect(typeErrors(join(dir, "main.ts"), sources)).toEqual([]);

  const proc = spawn(process.execPath, ["--import", "./resolve-package.mjs", "main.ts"], {
    cwd: dir,
    env: { ...process.env, PORT: "0", MODEL: "", NODE_OPTIONS: "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout.on("data", (d) => (out += d));
  proc.stderr.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => proc.on("exit", (code) => resolve(code)));
  try {
    const deadline = Date.now() + 60_000;
    let url: string | undefined;
    while (url === undefined) {
      url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`the snippet did not come up:\n${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(out).toMatch(/\{\s+status: 'succeeded',\s+usage: \{ input: 0, output: \d+/);
    expect(out).toMatch(/admitted assistant\/w1\/default sub=/);
    expect(out).toMatch(/settled assistant\/w1\/default sub=\S+ succeeded/);
    expect(existsSync(join(dir, "harness-data", "harness.db"))).toBe(true);

    const res = await fetch(`${url}/agents/assistant/w1?wait=true`, { method: "POST", body: JSON.stringify({ kind: "user", body: "what time is it?" }) });
    expect(await res.json()).toMatchObject({ status: "succeeded" });

    proc.kill("SIGTERM");
    expect(await exited).toBe(0);
  } finally {
    if (proc.exitCode === null) proc.kill("SIGKILL");
  }
}, 120_000);
