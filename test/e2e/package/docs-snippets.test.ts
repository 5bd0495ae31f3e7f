/**
 * Every code block of the README and docs/ is checked (issue 25): TypeScript and JavaScript blocks
 * type-check against this repository's sources as a user's code would, JSON blocks parse, shell
 * blocks parse (`bash -n`, a `<placeholder>` read as a word) and name only npm scripts and examples
 * that exist. The walkthroughs'
 * commands also run, verbatim, in the runbook test; the library guide's program runs in
 * library-guide.test.ts and the deploy guide's app is built from the tarball in
 * deploy-your-own-agents.test.ts.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { codeBlocks, documentationFiles, type CodeBlock } from "../../support/markdown-blocks.ts";
import { packageSources, repoRoot, typeErrors } from "../../support/package-snippets.ts";

const blocks = documentationFiles().flatMap(codeBlocks);
const byLang = (...langs: string[]) => blocks.filter((b) => langs.includes(b.lang));
const where = (b: CodeBlock) => `${b.file}:${b.line}`;

/**
 * Names a fragment may use without declaring them: what the prose around it has introduced (a
 * runtime, a CDK stack, a page's own render function). Everything else a block uses it declares
 * or imports.
 */
const FRAGMENT_GLOBALS = `declare const runtime: import("resolute-harness").Runtime;
declare const stack: import("aws-cdk-lib").Stack;
declare const baseUrl: string;
declare function cognitoCredentials(): Promise<{ accessKeyId: string; secretAccessKey: string; sessionToken?: string }>;
declare function render(text: string): void;
`;

// Inside the repository (build/ is ignored), so the blocks' own imports (aws-cdk-lib, hono, the
// AWS SDK: what a user installs beside the package) resolve from its node_modules.
mkdirSync(join(repoRoot, "build"), { recursive: true });
const dir = mkdtempSync(join(repoRoot, "build", "docs-snippets-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("the documentation has code blocks, each with a language", () => {
  expect(blocks.length).toBeGreaterThan(20);
  expect(blocks.filter((b) => b.lang === "").map(where), "give each fence a language (text for output)").toEqual([]);
});

it("every TypeScript and JavaScript block type-checks as a user's module", () => {
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "my-app", private: true, type: "module" }));
  writeFileSync(join(dir, "fragment-globals.d.ts"), FRAGMENT_GLOBALS);
  const files = new Map<string, CodeBlock>();
  for (const b of byLang("ts", "typescript", "js")) {
    const file = join(dir, `${b.file.replace(/[^a-z0-9]+/gi, "-")}-${b.line}.ts`);
    // A block without imports or exports would be a script sharing one scope with the others.
    writeFileSync(file, `${b.code}\nexport {};\n`);
    files.set(file, b);
  }
  const errors = typeErrors([...files.keys(), join(dir, "fragment-globals.d.ts")], packageSources()).map((e) => {
    const [file, ...rest] = e.split(":");
    const b = files.get(file!);
    return b ? `${b.file} (block at line ${b.line}), line ${rest.join(":")}` : e;
  });
  expect(errors).toEqual([]);
}, 300_000);

it("every JSON block parses", () => {
  for (const b of byLang("json")) expect(() => JSON.parse(b.code), where(b)).not.toThrow();
});

describe("shell blocks", () => {
  const shell = byLang("bash", "sh");
  const scripts = Object.keys((JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts);

  it("parse (bash -n)", () => {
    for (const b of shell) {
      // `<pid>`, `<record id>`: a value the reader fills in from what an earlier command printed.
      const filled = b.code.replace(/<[A-Za-z][\w .-]*>/g, "PLACEHOLDER");
      const check = spawnSync("bash", ["-n"], { input: filled, encoding: "utf8" });
      expect(check.stderr, where(b)).toBe("");
    }
  });

  it("name npm scripts and examples that exist", () => {
    const missing: string[] = [];
    for (const b of shell) {
      for (const [, script] of b.code.matchAll(/\bnpm run ([\w:-]+)/g)) if (!scripts.includes(script!)) missing.push(`${where(b)}: npm run ${script}`);
      for (const [, name] of b.code.matchAll(/\bnpm run example -- ([\w-]+)/g)) {
        if (!existsSync(join(repoRoot, "examples", name!))) missing.push(`${where(b)}: example ${name}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
