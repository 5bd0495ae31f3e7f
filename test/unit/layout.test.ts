/**
 * Tests where a maintainer looks (issue 25): every module of src/ has a test named after it,
 * test/unit/<path>.test.ts (or <path>.<aspect>.test.ts), or is listed in untested-modules.ts
 * with where it is exercised instead; and src/ has no import circle.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { expect, it } from "vitest";
import { COVERED_ELSEWHERE } from "./untested-modules.ts";

const root = join(import.meta.dirname, "../..");
const src = join(root, "src");
const modules = readdirSync(src, { recursive: true, encoding: "utf8" })
  .filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))
  .map((f) => f.split("\\").join("/"))
  .sort();
const tests = new Set(
  readdirSync(join(root, "test/unit"), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".test.ts"))
    .map((f) => f.split("\\").join("/")),
);
const mirrored = (module: string) => {
  const base = module.replace(/\.ts$/, "");
  return [...tests].some((t) => t === `${base}.test.ts` || (t.startsWith(`${base}.`) && t.slice(base.length + 1).split(".").length >= 3));
};

it("every src module has a mirrored unit test or is a listed exception", () => {
  const missing = modules.filter((m) => !mirrored(m) && !(m in COVERED_ELSEWHERE));
  expect(missing, "add test/unit/<path>.test.ts, or list the module in untested-modules.ts with where it is tested").toEqual([]);
  const stale = Object.keys(COVERED_ELSEWHERE).filter((m) => !modules.includes(m) || mirrored(m));
  expect(stale, "listed in untested-modules.ts but gone or now mirrored: remove the entry").toEqual([]);
  const count = modules.length - Object.keys(COVERED_ELSEWHERE).length;
  console.log(`src modules: ${modules.length}, with a mirrored unit test: ${count}, listed exceptions: ${Object.keys(COVERED_ELSEWHERE).length}`);
});

it("src/ has no import circle", () => {
  const graph = new Map<string, string[]>();
  for (const m of modules) {
    const file = join(src, m);
    const text = readFileSync(file, "utf8");
    const deps = [...text.matchAll(/(?:import|export)\s[^;]*?from\s+"(\.[^"]+)"/gs)]
      .map((x) => normalize(join(dirname(file), x[1]!)))
      .filter((p) => p.endsWith(".ts") && existsSync(p))
      .map((p) => relative(src, p).split("\\").join("/"));
    graph.set(m, deps);
  }
  const circles: string[] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (m: string) => {
    state.set(m, "open");
    stack.push(m);
    for (const d of graph.get(m) ?? []) {
      if (state.get(d) === "open") circles.push([...stack.slice(stack.indexOf(d)), d].join(" → "));
      else if (!state.has(d)) visit(d);
    }
    stack.pop();
    state.set(m, "done");
  };
  for (const m of modules) if (!state.has(m)) visit(m);
  expect(circles).toEqual([]);
});
