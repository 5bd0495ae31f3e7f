/**
 * `npm run build` (and `npm pack`'s prepack): the package's dist/ from src/. TypeScript compiles
 * the library; esbuild bundles the chat page's script with its libraries (they ship inside it,
 * so installing the package installs none of them); the console's page is copied as it is; the
 * `harness` bin stays executable.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bundleChatPage, CHAT_PAGE_FILES } from "../src/chat-page/assets.ts";
import { CONSOLE_FILES } from "../src/console/mount-console.ts";

const root = join(import.meta.dirname, "..");
const dist = join(root, "dist");

rmSync(dist, { recursive: true, force: true });
execFileSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", join(root, "tsconfig.build.json")], { stdio: "inherit" });

const page = await bundleChatPage();
const pageDir = join(dist, "chat-page", "assets");
mkdirSync(pageDir, { recursive: true });
for (const file of CHAT_PAGE_FILES) writeFileSync(join(pageDir, file), page[file]);

// The console's page is plain files (ADR 0054): copied as they are, beside its module.
const consoleDir = join(dist, "console", "page");
mkdirSync(consoleDir, { recursive: true });
for (const file of CONSOLE_FILES) copyFileSync(join(root, "src", "console", "page", file), join(consoleDir, file));

// tsc writes files without the execute bit; npm sets it on install, but `npx harness` in this
// repository runs dist/cli/main.js as it is.
chmodSync(join(dist, "cli", "main.js"), 0o755);
