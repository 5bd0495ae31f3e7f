import type * as NodeSqlite from "node:sqlite";

/**
 * `node:sqlite`, loaded without the "SQLite is an experimental feature" warning that Node 22
 * prints on its first load: an app on this store would otherwise print it on every start, and
 * there is nothing its user could do about it. Only that warning is held back, only while the
 * module loads; every other warning goes out as usual.
 */
export const { DatabaseSync } = loadWithoutExperimentalWarning();

function loadWithoutExperimentalWarning(): typeof NodeSqlite {
  const emitWarning = process.emitWarning;
  process.emitWarning = function (this: NodeJS.Process, warning: string | Error, ...rest: unknown[]) {
    const type = typeof rest[0] === "string" ? rest[0] : (rest[0] as { type?: string } | undefined)?.type;
    const text = typeof warning === "string" ? warning : warning.message;
    if (type === "ExperimentalWarning" && text.includes("SQLite")) return;
    return (emitWarning as (...args: unknown[]) => void).call(this, warning, ...rest);
  } as typeof process.emitWarning;
  try {
    return process.getBuiltinModule("node:sqlite");
  } finally {
    process.emitWarning = emitWarning;
  }
}
