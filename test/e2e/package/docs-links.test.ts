/**
 * Every relative link of the README and docs/ reaches a file of the repository, and every
 * `#anchor` a heading of its target (GitHub's slugs), so moving a section cannot strand a reader.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { expect, it } from "vitest";
import { documentationFiles } from "../../support/markdown-blocks.ts";
import { repoRoot } from "../../support/package-snippets.ts";

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes. */
function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/`/g, "")
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");
}

/** Markdown without its fenced code blocks (a `](x)` in code is not a link). */
function prose(text: string): string {
  return text.replace(/^\s*```[\s\S]*?^\s*```\s*$/gm, "");
}

function anchorsOf(file: string): Set<string> {
  const headings = prose(readFileSync(file, "utf8")).match(/^#{1,6} .+$/gm) ?? [];
  return new Set(headings.map((h) => slug(h.replace(/^#+ /, ""))));
}

it("every relative link and anchor in README and docs/ resolves", () => {
  const broken: string[] = [];
  for (const file of documentationFiles()) {
    for (const [, target] of prose(readFileSync(file, "utf8")).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/i.test(target!)) continue; // http:, https:, mailto:
      const [path, anchor] = target!.split("#") as [string, string | undefined];
      const resolved = path === "" ? file : join(dirname(file), path);
      const at = `${relative(repoRoot, file)} → ${target}`;
      if (!existsSync(resolved)) {
        broken.push(`${at}: no such file`);
        continue;
      }
      if (anchor !== undefined && resolved.endsWith(".md") && statSync(resolved).isFile() && !anchorsOf(resolved).has(anchor)) {
        broken.push(`${at}: no such heading`);
      }
    }
  }
  expect(broken).toEqual([]);
});
