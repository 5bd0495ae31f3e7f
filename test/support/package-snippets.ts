/**
 * Code as a user would write it, checked against this repository: `resolute-harness[/subpath]`
 * imports resolved to the sources package.json's `exports` are built from, a strict type check
 * of a snippet, and a Node import hook to run it. Shared by the README, docs and entry-example tests.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import ts from "typescript";

export const repoRoot = join(import.meta.dirname, "../..");

/** `resolute-harness[/subpath]` → the source file its `exports` entry is built from. */
export function packageSources(): Record<string, string> {
  const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { name: string; exports: Record<string, { import: string }> };
  return Object.fromEntries(
    Object.entries(pkg.exports).map(([entry, target]) => [
      entry === "." ? pkg.name : `${pkg.name}/${entry.slice(2)}`,
      join(repoRoot, target.import.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts")),
    ]),
  );
}

/**
 * The type errors of `files` (a user's strict settings). The model SDKs' declarations (megabytes,
 * reached through the lazily loaded providers) are read as empty modules: a snippet's types never
 * come from them, and parsing them would take most of the check's time.
 */
export function typeErrors(files: readonly string[], sources = packageSources()): string[] {
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2023,
    lib: ["lib.es2023.d.ts", "lib.dom.d.ts"],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    allowImportingTsExtensions: true,
    erasableSyntaxOnly: true,
    verbatimModuleSyntax: true,
    types: ["node"],
    typeRoots: [join(repoRoot, "node_modules/@types")],
    paths: Object.fromEntries(Object.entries(sources).map(([name, path]) => [name, [path]])),
  };
  const host = ts.createCompilerHost(options);
  const sdk = /\/node_modules\/(openai|@anthropic-ai|@google\/genai|@aws-sdk\/client-bedrock|@mistralai)\//;
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (name, language, ...rest) => (sdk.test(name) ? ts.createSourceFile(name, "export {};", language) : read(name, language, ...rest));
  const program = ts.createProgram([...files], options, host);
  return files.flatMap((file) => {
    const source = program.getSourceFile(file)!;
    return [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)];
  })
    .concat(program.getOptionsDiagnostics())
    .map(
      (d) =>
        `${d.file ? `${d.file.fileName}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1} ` : ""}${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`,
    );
}

/** A module for `node --import` that resolves the package's specifiers to this repository's sources. */
export function resolveHookModule(sources = packageSources()): string {
  const urls = Object.fromEntries(Object.entries(sources).map(([name, path]) => [name, pathToFileURL(path).href]));
  return `import { registerHooks } from "node:module";
const sources = ${JSON.stringify(urls)};
registerHooks({
  resolve(specifier, context, next) {
    return specifier in sources ? { url: sources[specifier], shortCircuit: true } : next(specifier, context);
  },
});
`;
}

/** The `@example` code blocks of a module's leading comment (its `@module` documentation). */
export function moduleExamples(file: string): string[] {
  const text = readFileSync(file, "utf8");
  if (!text.startsWith("/**")) return [];
  const comment = text.slice(0, text.indexOf("*/")).replace(/^\s*\* ?/gm, "");
  return [...comment.matchAll(/@example[^\n]*\n```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
}
