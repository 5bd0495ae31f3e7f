import { existsSync, readFileSync } from "node:fs";
import type { BuildOptions } from "esbuild";
import { join, sep } from "node:path";

/** The chat page's files as the browser gets them. */
export interface ChatPageAssets {
  "index.html": string;
  "chat.css": string;
  /** The page's script with its libraries (markdown-it, DOMPurify, the client's MessageView) bundled in. */
  "chat.js": string;
  /** The licenses of the libraries bundled into `chat.js`. */
  "chat.js.LICENSE.txt": string;
}

export const CHAT_PAGE_FILES = ["index.html", "chat.css", "chat.js", "chat.js.LICENSE.txt"] as const satisfies readonly (keyof ChatPageAssets)[];

/** The page's sources (HTML, CSS and plain ES modules). */
const PAGE_DIR = join(import.meta.dirname, "page");
/** Where `npm run build` writes the bundled page, next to this module in `dist/`. */
export const BUILT_ASSETS_DIR = join(import.meta.dirname, "assets");

/**
 * The page's files: the ones `npm run build` bundled (what the package ships), or, run from the
 * repository's sources, bundled now with esbuild (a dev dependency; about 0.1–0.3 s).
 */
export async function chatPageAssets(dir?: string): Promise<ChatPageAssets> {
  for (const built of dir === undefined ? [BUILT_ASSETS_DIR] : [dir, BUILT_ASSETS_DIR]) {
    if (existsSync(join(built, "chat.js"))) {
      return Object.fromEntries(CHAT_PAGE_FILES.map((f) => [f, readFileSync(join(built, f), "utf8")])) as unknown as ChatPageAssets;
    }
  }
  return bundleChatPage();
}

/**
 * Bundles the page's script with esbuild (minified, ES2022, for browsers): the libraries reach
 * the browser from the page's own origin, and the package installs none of them. The licenses of
 * what was bundled are collected from their packages.
 */
export async function bundleChatPage(): Promise<ChatPageAssets> {
  const esbuild = await import("esbuild");
  const result = await esbuild.build(chatPageBuildOptions());
  return chatPageFiles(result.outputFiles[0]!.text, Object.keys(result.metafile.inputs));
}

/** esbuild's options for the page's script (one output, not written: `outputFiles[0]`). */
export function chatPageBuildOptions(): BuildOptions & { write: false; metafile: true } {
  return {
    entryPoints: [join(PAGE_DIR, "chat.js")],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    minify: true,
    write: false,
    metafile: true,
    legalComments: "eof",
    banner: { js: "/*! Licenses of the libraries bundled here: /chat.js.LICENSE.txt */" },
    logLevel: "silent",
  };
}

/** The page's files around a bundled script (`inputs`: what esbuild read, for the licenses). */
export function chatPageFiles(script: string, inputs: string[]): ChatPageAssets {
  return {
    "index.html": readFileSync(join(PAGE_DIR, "index.html"), "utf8"),
    "chat.css": readFileSync(join(PAGE_DIR, "chat.css"), "utf8"),
    "chat.js": script,
    "chat.js.LICENSE.txt": licensesOf(inputs),
  };
}

/** The LICENSE files of the packages (under node_modules) among esbuild's inputs. */
function licensesOf(inputs: string[]): string {
  const roots = new Set<string>();
  for (const input of inputs) {
    const parts = input.split(/[\\/]/);
    const at = parts.lastIndexOf("node_modules");
    if (at < 0) continue;
    roots.add(parts.slice(0, at + (parts[at + 1]!.startsWith("@") ? 3 : 2)).join(sep));
  }
  const sections = [...roots].sort().map((root) => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { name: string; version: string; license?: string };
    const file = ["LICENSE", "LICENSE.md", "LICENSE.txt", "license"].map((f) => join(root, f)).find((f) => existsSync(f));
    const text = file ? readFileSync(file, "utf8").trim() : `License: ${pkg.license ?? "see the package"}`;
    return `${pkg.name} ${pkg.version} (${pkg.license ?? "see below"})\n${"-".repeat(60)}\n${text}\n`;
  });
  return `The chat page's script bundles these libraries.\n\n${sections.join("\n\n")}`;
}
