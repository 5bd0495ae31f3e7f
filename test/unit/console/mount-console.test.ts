import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { CONSOLE_FILES, mountConsole } from "../../../src/console/mount-console.ts";

describe("mountConsole", () => {
  it("serves the page and its modules as they are, under the chat page's CSP (own origin only, no framing)", async () => {
    const app = new Hono();
    mountConsole(app);
    const page = await app.request("/console");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(await page.text()).toContain('<script type="module" src="/console/console.js">');
    for (const file of CONSOLE_FILES.filter((f) => f.endsWith(".js"))) {
      const res = await app.request(`/console/${file}`);
      expect(res.status, file).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    }
    expect((await app.request("/console/nope.js")).status).toBe(404);
  });
});
