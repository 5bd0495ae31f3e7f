/**
 * docs/reference/ says what the code does, and all of it (issue 25): every record kind has its
 * section, every error code its row, every environment variable the code reads its line, and the
 * construct's props (generated from their TSDoc) are current.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { RECORD_KINDS } from "../../../src/protocol/records.ts";
import * as lambdaEnv from "../../../src/lambda/env.ts";
import { repoRoot } from "../../support/package-snippets.ts";

const read = (file: string) => readFileSync(join(repoRoot, file), "utf8");

/** The string members of an exported union type, read from its declaration. */
function unionMembers(file: string, type: string): string[] {
  const text = read(file);
  const start = text.indexOf(`export type ${type} =`);
  expect(start, `${file} declares ${type}`).toBeGreaterThanOrEqual(0);
  const declaration = text.slice(start, text.indexOf(";", start));
  return [...declaration.matchAll(/"([a-z_]+)"/g)].map((m) => m[1]!);
}

it("every record kind has its section in records.md", () => {
  const page = read("docs/reference/records.md");
  expect(RECORD_KINDS.filter((kind) => !page.includes(`## \`${kind}\``))).toEqual([]);
});

it("every error code (refusals and settled outcomes) is in errors.md", () => {
  const page = read("docs/reference/errors.md");
  const codes = [
    ...unionMembers("src/protocol/error-body.ts", "HarnessErrorCode"),
    ...unionMembers("src/protocol/error-body.ts", "TransportErrorCode"),
    ...unionMembers("src/protocol/records.ts", "SettledErrorCode"),
    ...unionMembers("src/agent/mcp-tools.ts", "McpToolsErrorCode"),
  ];
  expect(codes.length).toBeGreaterThan(20);
  expect(codes.filter((code) => !page.includes(`\`${code}\``))).toEqual([]);
});

it("every environment variable the code reads is in configuration.md", () => {
  const page = read("docs/reference/configuration.md");
  const names = new Set<string>(Object.values(lambdaEnv.HARNESS_ENV));
  // Read by name where they are read: the handlers' settings, the examples' settings, the CLI.
  const readers = [
    "src/lambda/settings.ts",
    "src/lambda/wiring.ts",
    "examples/shared/settings.ts",
    "src/cli/program.ts",
    "src/cli/dev-command.ts",
    "src/cli/dev-server.ts",
  ];
  for (const file of readers) {
    const text = read(file);
    for (const [, name] of text.matchAll(/\benv\.([A-Z][A-Z0-9_]+)\b/g)) names.add(name!);
    for (const [, name] of text.matchAll(/["'`](HARNESS_[A-Z0-9_]+)\b/g)) names.add(name!);
  }
  for (const constant of Object.keys(lambdaEnv)) names.delete(constant); // `HARNESS_ENV` in a comment is the constant
  expect(names.size).toBeGreaterThan(20);
  expect([...names].filter((name) => !page.includes(`\`${name}\``))).toEqual([]);
});

it("the construct's props in construct.md are current (npm run docs:reference)", () => {
  const check = spawnSync(process.execPath, ["scripts/docs-reference.ts", "--check"], { cwd: repoRoot, encoding: "utf8" });
  expect(check.stderr).toBe("");
  expect(check.status).toBe(0);
}, 120_000);

it("every model provider, and every variable pi-ai's auth reads for it, is in configuration.md (issue 37)", async () => {
  const { SUPPORTED_PROVIDERS, providerVariables } = await import("../../../src/agent/models.ts");
  const page = read("docs/reference/configuration.md");
  const providers = page.slice(page.indexOf("## Model providers"), page.indexOf("## The Lambda functions"));
  expect(SUPPORTED_PROVIDERS.length).toBeGreaterThan(40);
  const missing: string[] = [];
  for (const name of SUPPORTED_PROVIDERS) {
    if (!providers.includes(`\`${name}/…\``)) missing.push(`${name}/…`);
    for (const variable of await providerVariables(name)) if (!providers.includes(`\`${variable}\``)) missing.push(`${name}: ${variable}`);
  }
  expect(missing).toEqual([]);
});
