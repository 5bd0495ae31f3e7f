/**
 * The fault seam's process side (`src/ports/faults.ts`), for dev tools and tests that crash or
 * pause a real process at a named phase: the local cloud's functions and the embedded server read
 * `HARNESS_FAULTS` at start (`preload.ts`) and install the hook before their runtime is built.
 *
 *   HARNESS_FAULTS='[{"phase":"reserved","action":"crash","match":"cm-reserved-"}]'
 *   HARNESS_FAULTS_DIR=/tmp/faults     # where "fired once" is remembered across restarts
 *
 * A rule fires at most once per submission (a crashed process's successor must get past the
 * point): with `HARNESS_FAULTS_DIR` the memory is a file per (phase, submission) created with
 * `wx`, so it holds across the process being killed and started again; without, it is per process.
 */
import { closeSync, openSync } from "node:fs";
import { join } from "node:path";
import { FAULT_PHASES, installProcessFaults, type FaultHook, type FaultPhase } from "../../src/ports/faults.ts";

/** One fault: at `phase`, for a submission whose id contains `match` (any when absent). */
export interface FaultRule {
  phase: FaultPhase;
  /** `crash`: SIGKILL this process (kill -9); `hang`: never continue; `pause`: continue after `ms`. */
  action: "crash" | "hang" | "pause";
  ms?: number;
  match?: string;
}

export const FAULTS_ENV = "HARNESS_FAULTS";
export const FAULTS_DIR_ENV = "HARNESS_FAULTS_DIR";

/** Parses `HARNESS_FAULTS` (a JSON array of rules); throws naming what is wrong. */
export function parseFaultRules(text: string): FaultRule[] {
  const rules = JSON.parse(text) as unknown;
  if (!Array.isArray(rules)) throw new Error(`${FAULTS_ENV}: expected a JSON array of rules`);
  return rules.map((rule: Partial<FaultRule>, i) => {
    if (!FAULT_PHASES.includes(rule.phase as FaultPhase)) throw new Error(`${FAULTS_ENV}[${i}]: unknown phase ${String(rule.phase)}`);
    if (!["crash", "hang", "pause"].includes(String(rule.action))) throw new Error(`${FAULTS_ENV}[${i}]: unknown action ${String(rule.action)}`);
    if (rule.action === "pause" && !(typeof rule.ms === "number" && rule.ms >= 0)) throw new Error(`${FAULTS_ENV}[${i}]: pause needs ms`);
    return rule as FaultRule;
  });
}

/** A hook that applies `rules`, each at most once per submission (remembered in `dir` if given). */
export function faultHook(rules: readonly FaultRule[], dir?: string, log: (line: string) => void = (l) => console.error(l)): FaultHook {
  const fired = new Set<string>();
  const firstTime = (phase: FaultPhase, submissionId: string): boolean => {
    const key = `${phase}~${submissionId.replace(/[^A-Za-z0-9._-]/g, "_")}`;
    if (fired.has(key)) return false;
    fired.add(key);
    if (!dir) return true;
    try {
      closeSync(openSync(join(dir, key), "wx"));
      return true;
    } catch {
      return false; // fired before, by this process's predecessor
    }
  };
  return (phase, submissionId) => {
    for (const rule of rules) {
      if (rule.phase !== phase || (rule.match !== undefined && !submissionId.includes(rule.match))) continue;
      if (!firstTime(phase, submissionId)) return;
      log(`fault: ${rule.action} at ${phase} of ${submissionId}`);
      if (rule.action === "crash") {
        process.kill(process.pid, "SIGKILL");
        return new Promise<never>(() => {}); // the signal lands before anything else runs
      }
      if (rule.action === "hang") return new Promise<never>(() => {});
      return new Promise<void>((resolve) => setTimeout(resolve, rule.ms));
    }
  };
}

/** Installs the process's hook from `HARNESS_FAULTS` (nothing when unset); returns the rules. */
export function installFaultsFromEnv(env: NodeJS.ProcessEnv = process.env): FaultRule[] {
  const text = env[FAULTS_ENV];
  if (!text) return [];
  const rules = parseFaultRules(text);
  installProcessFaults(faultHook(rules, env[FAULTS_DIR_ENV] || undefined));
  return rules;
}
