/** What a bench printed, captured from `console.log` while `run` runs. */
import { vi } from "vitest";

export async function printed(run: () => Promise<void>): Promise<string> {
  const lines: string[] = [];
  const spy = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(" ")));
  try {
    await run();
  } finally {
    spy.mockRestore();
  }
  return lines.join("\n");
}

/** The number a figure line (`  name: 12.3 ms  target ≤ …`) printed, by a pattern of its name. */
export function figureOf(output: string, name: RegExp): number {
  const line = output.split("\n").find((l) => name.test(l));
  if (!line) throw new Error(`no figure ${name} in:\n${output}`);
  const value = /:\s+(-?[\d.]+)/.exec(line.slice(line.search(name)))?.[1];
  if (value === undefined) throw new Error(`figure ${name} has no value: ${line}`);
  return Number(value);
}
