import { watch, type FSWatcher } from "node:fs";
import { basename, dirname } from "node:path";

/**
 * Watches a set of files and calls `onChange` once per burst of changes (editors write a file in
 * several steps, some through a rename). It watches each file's folder, not the file itself, so a
 * file replaced by a rename is still seen, and nothing is watched recursively (a project's
 * node_modules would cost thousands of watches).
 */
export class FileWatcher {
  readonly #watchers = new Map<string, FSWatcher>();
  readonly #files = new Map<string, Set<string>>();
  readonly #onChange: (file: string) => void;
  readonly #debounceMs: number;
  #timer: NodeJS.Timeout | undefined;

  constructor(onChange: (file: string) => void, debounceMs = 100) {
    this.#onChange = onChange;
    this.#debounceMs = debounceMs;
  }

  /** Adds a file (it need not exist yet: its folder is watched). */
  add(file: string): void {
    const dir = dirname(file);
    const names = this.#files.get(dir) ?? new Set<string>();
    names.add(basename(file));
    this.#files.set(dir, names);
    if (this.#watchers.has(dir)) return;
    try {
      const watcher = watch(dir, { persistent: true }, (_event, name) => {
        if (name !== null && this.#files.get(dir)?.has(name.toString())) this.#changed(`${dir}/${name.toString()}`);
      });
      watcher.on("error", () => this.#watchers.delete(dir));
      this.#watchers.set(dir, watcher);
    } catch {
      // A folder that cannot be watched (gone, no permission): its files are not reloaded.
    }
  }

  /** Forgets every file (the next server run reports its own). */
  clear(keep: readonly string[] = []): void {
    this.close();
    for (const file of keep) this.add(file);
  }

  close(): void {
    clearTimeout(this.#timer);
    for (const watcher of this.#watchers.values()) watcher.close();
    this.#watchers.clear();
    this.#files.clear();
  }

  #changed(file: string): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#onChange(file), this.#debounceMs);
  }
}
