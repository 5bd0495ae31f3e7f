/**
 * The chat page's files in the http function's asset (the construct's `chatPage`): written beside
 * the bundle at synth, under `chat-page/`, where the http handler tells `mountChatPage` to look.
 */
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildSync } from "esbuild";
import { BUILT_ASSETS_DIR, CHAT_PAGE_FILES, chatPageBuildOptions, chatPageFiles } from "../chat-page/assets.ts";

/** The folder of the asset that holds the page (`lambda/http.ts` reads it beside itself). */
export const CHAT_PAGE_ASSET_DIR = "chat-page";

/**
 * Writes the page's files into `dir`: the ones `npm run build` bundled (the package), or, from the
 * repository's sources, bundled now. Synchronous, as a CDK local bundling is.
 */
export function writeChatPageAssets(dir: string): void {
  mkdirSync(dir, { recursive: true });
  if (existsSync(join(BUILT_ASSETS_DIR, "chat.js"))) {
    for (const file of CHAT_PAGE_FILES) copyFileSync(join(BUILT_ASSETS_DIR, file), join(dir, file));
    return;
  }
  const result = buildSync(chatPageBuildOptions());
  const files = chatPageFiles(result.outputFiles[0]!.text, Object.keys(result.metafile.inputs));
  for (const file of CHAT_PAGE_FILES) writeFileSync(join(dir, file), files[file]);
}
