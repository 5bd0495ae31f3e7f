/**
 * The chat page's files in the http function's asset (the construct's `chatPage`): written at
 * synth into `chat-page/`, and served from there by `mountChatPage({assetsDir})`.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Hono } from "hono";
import { afterAll, describe, expect, it } from "vitest";
import { CHAT_PAGE_FILES } from "../../../src/chat-page/assets.ts";
import { mountChatPage } from "../../../src/chat-page/mount-chat-page.ts";
import { writeChatPageAssets } from "../../../src/cdk/chat-page-asset.ts";

const dir = mkdtempSync(join(tmpdir(), "chat-page-asset-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("writeChatPageAssets", () => {
  it("writes the page's files (the script bundled), and mountChatPage serves the ones in assetsDir", async () => {
    writeChatPageAssets(join(dir, "chat-page"));
    for (const file of CHAT_PAGE_FILES) expect(readFileSync(join(dir, "chat-page", file), "utf8").length, file).toBeGreaterThan(0);
    expect(readFileSync(join(dir, "chat-page", "chat.js"), "utf8")).not.toMatch(/^import .* from "markdown-it"/m);

    // A marker in the served copy proves the page comes from assetsDir, not from the package.
    const marked = readFileSync(join(dir, "chat-page", "index.html"), "utf8").replace("</head>", "<!-- from the asset --></head>");
    writeFileSync(join(dir, "chat-page", "index.html"), marked);
    const app = new Hono();
    mountChatPage(app, { agents: ["assistant"], assetsDir: join(dir, "chat-page") });
    const page = await app.request("/");
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<!-- from the asset -->");
    expect((await app.request("/chat.js")).status).toBe(200);
  }, 60_000);
});
