/**
 * One line per figure: the name, the value with its unit, and the target beside it, marked when
 * missed. Benchmarks print; nothing here asserts.
 */

/** A target: the figure must be at most (`≤`) or at least (`≥`) `value`. */
export interface Target {
  op: "≤" | "≥";
  value: number;
  unit?: string;
}

/** `≤ value unit` */
export const atMost = (value: number, unit?: string): Target => ({ op: "≤", value, unit });
/** `≥ value unit` */
export const atLeast = (value: number, unit?: string): Target => ({ op: "≥", value, unit });

/** True when `value` meets `target`. */
export function meets(value: number, target: Target): boolean {
  return target.op === "≤" ? value <= target.value : value >= target.value;
}

/** Prints `  name: value unit  target op x unit` (with `MISSED` when it is not met). */
export function figure(name: string, value: number, unit: string, target?: Target, digits = 1): boolean {
  const shown = `${value.toFixed(digits)}${unit ? ` ${unit}` : ""}`;
  if (!target) {
    console.log(`  ${name}: ${shown}`);
    return true;
  }
  const ok = meets(value, target);
  const t = `target ${target.op} ${target.value}${target.unit ?? (unit ? ` ${unit}` : "")}`;
  console.log(`  ${name}: ${shown}  ${t}${ok ? "" : "  MISSED"}`);
  return ok;
}

/** Prints an indented note. */
export function note(text: string): void {
  console.log(`  ${text}`);
}

/** `12.3 ms` / `1.23 s` */
export function ms(value: number): string {
  return value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${value.toFixed(1)} ms`;
}
