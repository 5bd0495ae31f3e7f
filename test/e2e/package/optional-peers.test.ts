/**
 * Issue 27's acceptance "new peer dependencies are optional: the embedded quickstart's install does
 * not grow". npm installs a peer dependency unless it is marked optional, so every peer must be;
 * and the packages an install of resolute-harness brings (its `dependencies`, transitively, as the
 * lockfile resolves them) hold none of the front-end and tracing libraries.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const repoRoot = fileURLToPath(new URL("../../..", import.meta.url));
const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};
const lock = JSON.parse(readFileSync(join(repoRoot, "package-lock.json"), "utf8")) as {
  packages: Record<string, { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> }>;
};

/** The lockfile path `name` resolves to from the package at `from` (Node's lookup, upwards). */
function resolveIn(from: string, name: string): string | undefined {
  for (let dir = from; ; dir = dir.slice(0, Math.max(0, dir.lastIndexOf("/node_modules/")))) {
    const candidate = dir ? `${dir}/node_modules/${name}` : `node_modules/${name}`;
    if (lock.packages[candidate]) return candidate;
    if (!dir) return undefined;
  }
}

/** Every package a production install of this package brings, by name. */
function productionClosure(): Set<string> {
  const names = new Set<string>();
  const seen = new Set<string>();
  const pending = Object.keys(pkg.dependencies).map((name) => resolveIn("", name)!);
  while (pending.length > 0) {
    const path = pending.pop()!;
    if (seen.has(path)) continue;
    seen.add(path);
    names.add(path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length));
    for (const name of Object.keys(lock.packages[path]?.dependencies ?? {})) {
      const resolved = resolveIn(path, name);
      if (resolved) pending.push(resolved);
    }
  }
  return names;
}

describe("optional peers", () => {
  it("every peer dependency is optional, so npm installs none of them with the package", () => {
    const required = Object.keys(pkg.peerDependencies).filter((name) => pkg.peerDependenciesMeta[name]?.optional !== true);
    expect(required).toEqual([]);
    for (const name of ["ai", "react", "@opentelemetry/api", "@aws-lambda-powertools/tracer"]) {
      expect(pkg.peerDependencies, name).toHaveProperty(name);
      expect(pkg.dependencies, name).not.toHaveProperty(name);
    }
  });

  it("an install brings none of the front-end or tracing libraries", () => {
    const closure = productionClosure();
    expect(closure.size).toBeGreaterThan(10);
    const unwanted = [...closure].filter((name) =>
      /^(ai|react|react-dom|@ai-sdk\/.*|@opentelemetry\/.*|@aws-lambda-powertools\/.*|aws-xray-sdk-core|aws-cdk-lib|esbuild)$/.test(name),
    );
    expect(unwanted).toEqual([]);
  });
});
