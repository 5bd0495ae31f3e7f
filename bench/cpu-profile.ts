/**
 * Reading a V8 `.cpuprofile` (from `node --cpu-prof`) into a few lines: where the busy time went,
 * by component (project directory or npm package; Node internals and GC charged to the nearest
 * component on the stack), and the hottest functions by self time.
 */
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** A fresh directory for `--cpu-prof-dir`. */
export function newProfileDir(): string {
  return mkdtempSync(join(tmpdir(), "harness-bench-prof-"));
}

/** The component a script URL belongs to: `src/<dir>`, `<package>`, `node:<module>`, or "". */
export function component(url: string): string {
  if (url === "") return "";
  if (url.startsWith("node:")) {
    const rest = url.slice(5).replace(/^internal\//, "");
    return `node:${rest.split("/")[0]!.replace(/\.js$/, "")}`;
  }
  const nm = url.lastIndexOf("/node_modules/");
  if (nm >= 0) {
    const parts = url.slice(nm + 14).split("/");
    return parts[0]!.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  const src = /\/(src|examples|dev|bench)\/([^/]+)\//.exec(url);
  if (src) return `${src[1]}/${src[2]}`;
  return url.split("/").slice(-2).join("/");
}

function label(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const file = url.includes("/node_modules/") ? component(url) : url.replace(/^.*\/(src|examples|bench|dev)\//, "$1/");
  return `${functionName || "(anonymous)"}${file ? ` ${file}:${lineNumber + 1}` : ""}`;
}

/** Summary lines of every profile in `dir` (merged). */
export function cpuProfileSummary(dir: string, top = 8): string[] {
  const files = readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"));
  if (files.length === 0) return [`no .cpuprofile in ${dir}`];
  const self = new Map<string, number>();
  const charged = new Map<string, number>();
  const fns = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const file of files) {
    const profile = JSON.parse(readFileSync(join(dir, file), "utf8")) as CpuProfile;
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    // The nearest frame on the stack that belongs to a project directory or a package.
    const owner = new Map<number, string>();
    const ownerOf = (id: number): string => {
      const known = owner.get(id);
      if (known !== undefined) return known;
      const node = byId.get(id)!;
      const c = component(node.callFrame.url);
      const p = parent.get(id);
      const result = c !== "" && !c.startsWith("node:") ? c : p === undefined ? c || "(native)" : ownerOf(p);
      owner.set(id, result);
      return result;
    };
    for (let i = 0; i < profile.samples.length; i++) {
      const dt = (profile.timeDeltas[i] ?? 0) / 1000;
      const node = byId.get(profile.samples[i]!)!;
      const name = node.callFrame.functionName;
      total += dt;
      if (name === "(idle)") {
        idle += dt;
        continue;
      }
      const where = name === "(garbage collector)" ? "(gc)" : name === "(program)" ? "(program)" : component(node.callFrame.url) || "(native)";
      self.set(where, (self.get(where) ?? 0) + dt);
      const chargedTo = name.startsWith("(") ? name : ownerOf(node.id);
      charged.set(chargedTo, (charged.get(chargedTo) ?? 0) + dt);
      fns.set(label(node), (fns.get(label(node)) ?? 0) + dt);
      // Every project function on the stack, once per sample.
      const onStack = new Set<string>();
      for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
        const frame = byId.get(id)!;
        if (/\/(src|examples)\//.test(frame.callFrame.url) && !frame.callFrame.url.includes("/node_modules/")) onStack.add(label(frame));
      }
      for (const fn of onStack) inclusive.set(fn, (inclusive.get(fn) ?? 0) + dt);
    }
  }
  const busy = total - idle;
  const pct = (v: number) => `${((v / busy) * 100).toFixed(1)}%`;
  const list = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, v]) => `${k} ${pct(v)}`)
      .join(", ");
  return [
    `busy ${busy.toFixed(0)} ms of ${total.toFixed(0)} ms profiled (${((busy / total) * 100).toFixed(0)}% of one core)`,
    `self time by where it ran: ${list(self)}`,
    `charged to the nearest project/package frame: ${list(charged)}`,
    `hottest functions (self): ${list(fns)}`,
    `heaviest project functions (inclusive): ${list(inclusive)}`,
  ];
}
