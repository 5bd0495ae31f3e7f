/**
 * `npm run example -- <name>`: starts examples/<name>/main.ts (basic, chat, triage, github-bot,
 * scheduler, multitenant, coder, approvals, mcp). Each honours PORT and DATA_DIR like `npm start`; see its README.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

const here = import.meta.dirname;
const names = readdirSync(here, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(here, d.name, "main.ts")))
  .map((d) => d.name)
  .sort();
const name = process.argv[2];
if (name === undefined || !names.includes(name)) {
  console.error(`usage: npm run example -- <name>   (one of: ${names.join(", ")})`);
  process.exit(2);
}
await import(`./${name}/main.ts`);
