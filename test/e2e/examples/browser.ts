import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Page } from "playwright-core";
import { expect } from "vitest";

/** What the browser tests of the chat page share: the Chromium they drive, layout and accessibility checks. */

/** Debian's `chromium` (`.ci/run` installs it), or CHROMIUM_PATH; undefined when none (the tests skip). */
export const CHROMIUM = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].find(
  (p): p is string => p !== undefined && p !== "" && existsSync(p),
);
if (!CHROMIUM && process.env.CI) throw new Error("Chromium not found: CI must install it (.ci/run installs Debian's chromium)");

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

interface Box {
  name: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

/** The visible boxes of the page's regions and controls, as laid out. */
async function boxes(page: Page, selectors: string[]): Promise<Box[]> {
  const out: Box[] = [];
  for (const selector of selectors) {
    for (const [i, handle] of (await page.locator(selector).elementHandles()).entries()) {
      const box = await handle.boundingBox();
      if (box && box.width > 0 && box.height > 0) out.push({ name: `${selector}#${i}`, ...box });
    }
  }
  return out;
}

/** Pairs of boxes that overlap by more than a pixel (rounding). */
function overlaps(list: Box[]): string[] {
  const found: string[] = [];
  for (let i = 0; i < list.length; i++) {
    for (let j = i + 1; j < list.length; j++) {
      const a = list[i]!;
      const b = list[j]!;
      const w = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
      const h = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
      if (w > 1 && h > 1) found.push(`${a.name} × ${b.name}`);
    }
  }
  return found;
}

/** The layout holds together: regions and controls do not overlap, and everything fits the width. */
export async function expectTidyLayout(page: Page, viewport: { width: number; height: number }): Promise<void> {
  const regions = await boxes(page, ["header", "#conversation", "aside", "footer"]);
  expect(overlaps(regions)).toEqual([]);
  const controls = await boxes(page, ["header select", "header input", "header button", "footer button", "#message"]);
  expect(overlaps(controls)).toEqual([]);
  for (const b of [...regions, ...controls]) {
    expect(b.x, b.name).toBeGreaterThanOrEqual(-1);
    expect(b.x + b.width, b.name).toBeLessThanOrEqual(viewport.width + 1);
  }
  for (const b of controls) expect(b.y + b.height, b.name).toBeLessThanOrEqual(viewport.height + 1);
  expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(viewport.width);
}

/** axe-core's WCAG 2.1 A/AA and best-practice rules over the page as it is. */
export async function accessibilityViolations(page: Page): Promise<string[]> {
  // evaluate() runs outside the page's Content-Security-Policy, which would refuse an injected script.
  await page.evaluate(AXE);
  const result = (await page.evaluate(`axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] } })`)) as {
    violations: { id: string; impact: string; nodes: { target: string[] }[] }[];
  };
  return result.violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

