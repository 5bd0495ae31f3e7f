import { lstat, realpath } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";

/** A tool was asked for a path outside its workspace (or one it cannot tell is inside). */
export class PathOutsideWorkspace extends Error {
  readonly code = "path_outside_workspace";
  constructor(path: string, why: string) {
    super(`${JSON.stringify(path)} is outside the workspace (${why})`);
    this.name = "PathOutsideWorkspace";
  }
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/**
 * The real path `path` names inside the workspace `root`, symlinks resolved, or
 * {@link PathOutsideWorkspace}. Relative paths are taken from the root; an absolute path must
 * already lie inside it. Every existing component is resolved (so a symlink inside pointing out is
 * refused), and a path whose last existing component is a dangling symlink is refused (writing
 * through it would create a file wherever it points). The path may not exist yet (a new file).
 *
 * What it cannot rule out: another process swapping a directory for a symlink between this check
 * and the use (the bash tool can do that; see the README).
 */
export async function workspacePath(root: string, path: string): Promise<string> {
  if (typeof path !== "string" || path === "" || path.includes("\0")) throw new PathOutsideWorkspace(String(path), "not a path");
  const realRoot = await realpath(root);
  const target = resolve(realRoot, path);
  if (!inside(realRoot, target)) throw new PathOutsideWorkspace(path, "it leaves the workspace");
  const missing: string[] = [];
  for (let existing = target; ; existing = dirname(existing)) {
    let real: string;
    try {
      real = await realpath(existing);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      if (await isEntry(existing)) throw new PathOutsideWorkspace(path, "a symlink that points nowhere");
      missing.unshift(basename(existing));
      continue;
    }
    const full = join(real, ...missing);
    if (!inside(realRoot, full)) throw new PathOutsideWorkspace(path, "a symlink leads out of it");
    return full;
  }
}

/** True when something (a dangling symlink, say) is at `path` even though it does not resolve. */
async function isEntry(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}
