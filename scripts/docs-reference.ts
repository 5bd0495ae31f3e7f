/**
 * Writes the generated parts of docs/reference/ from the sources they describe, so the reference
 * cannot drift from the code: the construct's props (from their TSDoc). `npm run docs:reference`
 * rewrites them; `--check` exits 1 when a file is stale (test/unit/docs/reference.test.ts runs it).
 *
 *   node scripts/docs-reference.ts [--check]
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";

const root = join(import.meta.dirname, "..");

/** The interfaces documented in docs/reference/construct.md, in order, with the file declaring each. */
const CONSTRUCT_INTERFACES: ReadonlyArray<readonly [name: string, file: string]> = [
  ["HarnessProps", "src/cdk/harness-props.ts"],
  ["HarnessSecret", "src/cdk/harness-secrets.ts"],
  ["HarnessBedrockOptions", "src/cdk/harness-props.ts"],
  ["HarnessApiGatewayOptions", "src/cdk/harness-api.ts"],
  ["HarnessAuthOptions", "src/cdk/harness-auth.ts"],
  ["HarnessJwtAuthOptions", "src/cdk/harness-auth.ts"],
  ["HarnessCognitoAuthOptions", "src/cdk/harness-auth.ts"],
  ["HarnessChatPage", "src/cdk/harness-props.ts"],
  ["HarnessSchedule", "src/cdk/harness-schedules.ts"],
];

interface PropDoc {
  name: string;
  type: string;
  optional: boolean;
  text: string;
  defaultText?: string;
}

/** The TSDoc comment of a node: its text and its `@default`. */
function docOf(node: ts.Node): { text: string; defaultText?: string } {
  const docs = (node as { jsDoc?: ts.JSDoc[] }).jsDoc ?? [];
  const doc = docs.at(-1);
  if (!doc) return { text: "" };
  const text = ts.getTextOfJSDocComment(doc.comment) ?? "";
  const tag = doc.tags?.find((t) => t.tagName.text === "default");
  const defaultText = tag ? (ts.getTextOfJSDocComment(tag.comment) ?? "").replace(/\s+/g, " ").trim() : undefined;
  return { text: text.trim(), defaultText };
}

function interfaceDocs(name: string, file: string): { text: string; props: PropDoc[] } {
  const source = ts.createSourceFile(file, readFileSync(join(root, file), "utf8"), ts.ScriptTarget.Latest, true);
  let found: ts.InterfaceDeclaration | undefined;
  source.forEachChild((node) => {
    if (ts.isInterfaceDeclaration(node) && node.name.text === name) found = node;
  });
  if (!found) throw new Error(`${file}: no interface ${name}`);
  const props = found.members.filter(ts.isPropertySignature).map((member) => ({
    name: member.name.getText(source),
    type: member.type ? member.type.getText(source).replace(/\s+/g, " ") : "unknown",
    optional: member.questionToken !== undefined,
    ...docOf(member),
  }));
  return { text: docOf(found).text, props };
}

/** `{@link X}` → `X`; a paragraph's line breaks kept as markdown reads them. */
function prose(text: string): string {
  return text.replace(/\{@link\s+([^}|\s]+)(?:\s*\|\s*([^}]+))?\}/g, (_m, target: string, label?: string) => `\`${(label ?? target).trim()}\``);
}

function constructSection(): string {
  const out: string[] = [];
  for (const [name, file] of CONSTRUCT_INTERFACES) {
    const { text, props } = interfaceDocs(name, file);
    out.push(`### \`${name}\``, "", `${prose(text)} (\`${file}\`)`, "");
    for (const p of props) {
      out.push(`#### \`${p.name}\``, "");
      out.push(`\`${p.type}\`${p.optional ? "" : " (required)"}${p.defaultText ? `. Default: ${prose(p.defaultText)}` : ""}`, "");
      if (p.text) out.push(prose(p.text), "");
    }
  }
  return out.join("\n");
}

/** Generated regions: a file, its marker name and what goes between the markers. */
const REGIONS: ReadonlyArray<{ file: string; marker: string; render: () => string }> = [
  { file: "docs/reference/construct.md", marker: "construct-props", render: constructSection },
];

function regenerate(content: string, marker: string, body: string): string {
  const start = `<!-- generated:${marker} (npm run docs:reference) -->`;
  const end = `<!-- end:${marker} -->`;
  const from = content.indexOf(start);
  const to = content.indexOf(end);
  if (from < 0 || to < from) throw new Error(`missing markers ${start} … ${end}`);
  return `${content.slice(0, from + start.length)}\n\n${body.trimEnd()}\n\n${content.slice(to)}`;
}

const check = process.argv.includes("--check");
let stale = 0;
for (const { file, marker, render } of REGIONS) {
  const path = join(root, file);
  const before = readFileSync(path, "utf8");
  const after = regenerate(before, marker, render());
  if (after === before) continue;
  if (check) {
    console.error(`${file} is stale: run npm run docs:reference`);
    stale++;
  } else {
    writeFileSync(path, after);
    console.log(`wrote ${file}`);
  }
}
process.exit(stale > 0 ? 1 : 0);
