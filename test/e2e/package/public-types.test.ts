/**
 * Every type a public signature names is itself public: for each entry in package.json's
 * `exports`, the option, result and callback types of its exported functions, classes, interfaces
 * and type aliases are exported by some entry too (a library user must be able to write
 * `const options: LocalModelOptions = …`). Reads the sources with the TypeScript compiler.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { expect, it } from "vitest";

const root = join(import.meta.dirname, "../../..");

/** package.json's export map, pointed back from `dist/*.js` to the `src/*.ts` it is built from (rootDir src). */
function entrySources(): Record<string, string> {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { exports: Record<string, { import: string }> };
  return Object.fromEntries(
    Object.entries(pkg.exports).map(([entry, target]) => [entry, join(root, target.import.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts"))]),
  );
}

it("names no unexported type in a public signature", () => {
  const entries = entrySources();
  // Only the sources: `noResolve` keeps the SDKs' declarations out (a third of a minute to parse),
  // and a type from a dependency is not ours to export anyway.
  const sources = readdirSync(join(root, "src"), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"))
    .map((f) => join(root, "src", f));
  const program = ts.createProgram(sources, {
    noResolve: true,
    noLib: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2023,
    allowImportingTsExtensions: true,
    noEmit: true,
    strict: true,
    skipLibCheck: true,
    types: [],
  });
  const checker = program.getTypeChecker();
  const resolveAlias = (s: ts.Symbol) => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s);

  const exported = new Set<ts.Symbol>();
  const publicSymbols: Array<{ entry: string; symbol: ts.Symbol }> = [];
  for (const [entry, file] of Object.entries(entries)) {
    const source = program.getSourceFile(file);
    expect(source, `${entry} → ${file}`).toBeDefined();
    for (const s of checker.getExportsOfModule(checker.getSymbolAtLocation(source!)!)) {
      const symbol = resolveAlias(s);
      exported.add(symbol);
      // `export * as schema`: its members are public too.
      if (symbol.flags & ts.SymbolFlags.ValueModule) for (const m of checker.getExportsOfModule(symbol)) exported.add(resolveAlias(m));
      publicSymbols.push({ entry, symbol });
    }
  }

  const missing = new Set<string>();
  const visit = (node: ts.Node, where: string): void => {
    if (ts.isTypeReferenceNode(node) || ts.isExpressionWithTypeArguments(node)) {
      const name = ts.isTypeReferenceNode(node) ? node.typeName : node.expression;
      const target = checker.getSymbolAtLocation(name);
      const symbol = target && resolveAlias(target);
      const file = symbol?.declarations?.[0]?.getSourceFile().fileName ?? "";
      if (symbol && file.startsWith(join(root, "src")) && !(symbol.flags & ts.SymbolFlags.TypeParameter) && !exported.has(symbol)) {
        missing.add(`${symbol.name} (${file.slice(root.length + 1)}), named by ${where}`);
      }
    }
    node.forEachChild((child) => visit(child, where));
  };
  const isPrivate = (member: ts.ClassElement) =>
    (member.name !== undefined && ts.isPrivateIdentifier(member.name)) ||
    (ts.getCombinedModifierFlags(member) & ts.ModifierFlags.Private) !== 0 ||
    ts.getJSDocTags(member).some((tag) => tag.tagName.text === "internal");

  // Parameter, return and property types only: a body's local types are nobody's business.
  const visitSignature = (node: ts.Node, where: string): void => {
    if (ts.isFunctionLike(node)) {
      for (const p of node.parameters) if (p.type) visit(p.type, where);
      if (node.type) visit(node.type, where);
    } else if (ts.isPropertyDeclaration(node) && node.type) {
      visit(node.type, where);
    }
  };

  for (const { entry, symbol } of publicSymbols) {
    const where = `${symbol.name} of "${entry}"`;
    for (const decl of symbol.declarations ?? []) {
      if (ts.isFunctionDeclaration(decl)) {
        visitSignature(decl, where);
      } else if (ts.isClassDeclaration(decl)) {
        decl.heritageClauses?.forEach((h) => visit(h, where));
        for (const member of decl.members) if (!isPrivate(member)) visitSignature(member, where);
      } else if (ts.isInterfaceDeclaration(decl) || ts.isTypeAliasDeclaration(decl)) {
        visit(decl, where);
      } else if (ts.isVariableDeclaration(decl) && decl.type) {
        visit(decl.type, where);
      }
    }
  }
  expect([...missing].sort()).toEqual([]);
}, 120_000);

/**
 * The root entry is the authoring API (issue 25: at most about 60 names); the adapter SPI lives in
 * `resolute-harness/store` and internals are not exported. Counts what `src/index.ts` exports, a
 * namespace (`schema`) as one name, and prints the count.
 */
it("the root export is the authoring API: at most 60 names", () => {
  const file = join(root, "src/index.ts");
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.ES2023, true);
  const names: string[] = [];
  for (const statement of source.statements) {
    if (!ts.isExportDeclaration(statement)) {
      const exported = ts.canHaveModifiers(statement) && ts.getModifiers(statement)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
      expect(exported, "src/index.ts only re-exports").toBeFalsy();
      continue;
    }
    const clause = statement.exportClause;
    expect(clause, "no `export *` from a module: every public name is chosen").toBeDefined();
    if (ts.isNamespaceExport(clause!)) names.push(clause.name.text);
    else for (const element of clause!.elements) names.push(element.name.text);
  }
  console.log(`root export: ${names.length} names`);
  expect(new Set(names).size).toBe(names.length);
  expect(names.length).toBeLessThanOrEqual(60);
  for (const internal of ["newId", "reduce", "safeCallId", "EnginePhase", "FaultHook", "Store", "project", "InProcessQueue"]) {
    expect(names, `${internal} is not part of the authoring API`).not.toContain(internal);
  }
});
