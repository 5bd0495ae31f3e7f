/**
 * The fenced code blocks of the project's documentation: the README and everything under docs/
 * except the ADRs (decisions as they were taken, not instructions) and the generated API reference.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { repoRoot } from "./package-snippets.ts";

export interface CodeBlock {
  /** The file, relative to the repository root. */
  file: string;
  /** The line of the opening fence (1-based). */
  line: number;
  /** The fence's language (`ts`, `bash`, …; "" when none). */
  lang: string;
  code: string;
}

/** README.md and docs/**\/*.md, minus docs/adr and docs/api. */
export function documentationFiles(): string[] {
  const docs = join(repoRoot, "docs");
  const files = readdirSync(docs, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".md") && !f.startsWith("adr") && !f.startsWith("api"))
    .map((f) => join(docs, f));
  return [join(repoRoot, "README.md"), ...files.sort()].filter((f) => existsSync(f));
}

/** The fenced blocks of one markdown file (an indented fence inside a list item included). */
export function codeBlocks(file: string): CodeBlock[] {
  const lines = readFileSync(file, "utf8").split("\n");
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j]!); j++) body.push(lines[j]!.slice(indent));
    blocks.push({ file: relative(repoRoot, file), line: i + 1, lang: open[2]!, code: `${body.join("\n")}\n` });
    i = j;
  }
  return blocks;
}
