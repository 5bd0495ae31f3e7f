/**
 * The chat page's image paste / drop and Edit (issue 29, ADR 0034), in headless Chromium against
 * a server in this process (the keyless local model, which lists the images it receives with
 * their digest and size; the package's chat page mounted at `/`): a pasted image uploads at once
 * (POST /attachments) and goes with the next message, the reply names its digest and size; a
 * dropped one likewise; a non-image is refused in words; Edit on an earlier message forks the
 * conversation from the record before it with the edited text (its image kept) and the page
 * switches to the new session, whose history is the prefix plus the edit; the old one is intact.
 */
import { createHash } from "node:crypto";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clockTool } from "../../../src/agent/clock-tool.ts";
import { localModel } from "../../../src/agent/local-model.ts";
import { mountChatPage } from "../../../src/chat-page/mount-chat-page.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";
import { createRuntime, type Runtime } from "../../../src/runtime/runtime.ts";
import { serve, type ServerHandle } from "../../../src/server/server.ts";
import { pngOfSize } from "../../support/attachment-fixtures.ts";
import { CHROMIUM } from "./browser.ts";

if (!CHROMIUM) console.warn("chat page paste/edit browser tests SKIPPED: no Chromium");

const POLL = { timeout: 20_000 };
let runtime: Runtime;
let server: ServerHandle;
let browser: Browser;
const store = createMemoryStore();

beforeAll(async () => {
  if (!CHROMIUM) return;
  runtime = createRuntime({ agents: { assistant: { initialize: () => ({ ...localModel({ chunkSize: 8 }), tools: [clockTool()] }) } }, store });
  await runtime.start();
  server = await serve(runtime, { port: 0, hostname: "127.0.0.1", log: () => {}, routes: (app) => mountChatPage(app, { agents: ["assistant"] }) });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await runtime?.close();
});

/** Puts files on the composer as a paste (or a drop) would, with the browser's own DataTransfer. */
async function give(page: Page, how: "paste" | "drop", files: { name: string; type: string; base64: string }[]): Promise<void> {
  // A string, evaluated in the page (this file is compiled without the DOM's types).
  await page.evaluate(`(() => {
    const data = new DataTransfer();
    for (const f of ${JSON.stringify(files)}) data.items.add(new File([Uint8Array.from(atob(f.base64), (c) => c.charCodeAt(0))], f.name, { type: f.type }));
    const target = document.getElementById(${JSON.stringify(how === "paste" ? "message" : "composer")});
    const init = { bubbles: true, cancelable: true };
    target.dispatchEvent(${JSON.stringify(how)} === "paste" ? new ClipboardEvent("paste", { ...init, clipboardData: data }) : new DragEvent("drop", { ...init, dataTransfer: data }));
  })()`);
}

const png = (seed: number) => {
  const bytes = pngOfSize(3_000, seed);
  return { bytes, file: { name: `shot-${seed}.png`, type: "image/png", base64: bytes.toString("base64") }, digest: `sha256:${createHash("sha256").update(bytes).digest("hex")}` };
};
const settled = (page: Page) => page.locator('.item[data-kind="settled"]');
const assistantTexts = (page: Page) => page.locator('.item[data-kind="assistant"]').allTextContents();
const userTexts = (page: Page) => page.locator('.item[data-kind="user"] .text').allTextContents();

describe.skipIf(!CHROMIUM)("the chat page: images pasted or dropped, and Edit (headless Chromium)", { timeout: 90_000 }, () => {
  it("a pasted image uploads and goes with the message; Edit forks from before it into a new session with the image kept", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const errors: string[] = [];
    page.on("pageerror", (err: Error) => errors.push(err.message));
    await page.goto(`${server.url}/?instance=paste-edit`);
    await expect.poll(() => page.locator("#instance").inputValue(), POLL).toBe("paste-edit");

    await page.fill("#message", "first question");
    await page.click("#send");
    await expect.poll(() => settled(page).count(), POLL).toBe(1);

    const image = png(7);
    await give(page, "paste", [image.file]);
    const chip = page.locator("#attachments .attachment");
    await expect.poll(() => chip.getAttribute("data-state"), POLL).toBe("ready");
    expect(await chip.getAttribute("data-digest")).toBe(image.digest);
    expect((await store.getAttachmentRef(image.digest)).size, "uploaded before the send").toBe(image.bytes.length);
    await page.fill("#message", "second question, with a picture");
    await page.click("#send");
    await expect.poll(() => settled(page).count(), POLL).toBe(2);
    expect(await page.locator("#attachments").isHidden(), "the chips go with the send").toBe(true);
    const replies = await assistantTexts(page);
    expect(replies[1]).toContain("You said: second question, with a picture");
    expect(replies[1], "the model got the image: its digest and size").toContain(image.digest.slice("sha256:".length, "sha256:".length + 12));
    expect(replies[1]).toContain(String(image.bytes.length));
    expect(await page.locator('.item[data-kind="user"] .attachments').allTextContents()).toEqual(["1 image attached"]);

    // Edit the second message: a new session with the first exchange and the edited message.
    const source = await store.getConversation({ agent: "assistant", instance: "paste-edit", session: "default" });
    const before = await store.readRecords(source.id);
    const second = page.locator('.item[data-kind="user"]').nth(1);
    await second.getByRole("button", { name: "Edit" }).click();
    await second.locator("textarea").fill("second question, edited");
    await second.getByRole("button", { name: "Send edit" }).click();
    await expect.poll(() => page.evaluate<string | null>('new URLSearchParams(location.hash.slice(1)).get("session")'), POLL).toMatch(/^fork-/);
    const session = (await page.evaluate<string | null>('new URLSearchParams(location.hash.slice(1)).get("session")'))!;
    expect(await page.locator("#session").inputValue()).toBe(session);
    await expect.poll(() => settled(page).count(), POLL).toBe(2);
    expect(await userTexts(page)).toEqual(["first question", "second question, edited"]);
    const edited = await assistantTexts(page);
    expect(edited[0]).toBe(replies[0]);
    expect(edited[1]).toContain("You said: second question, edited");
    expect(edited[1], "the edit keeps the message's image").toContain(image.digest.slice("sha256:".length, "sha256:".length + 12));
    expect(await store.readRecords(source.id), "the source conversation is untouched").toEqual(before);
    const forked = await store.getConversation({ agent: "assistant", instance: "paste-edit", session });
    const kinds = (await store.readRecords(forked.id)).filter((r) => r.kind === "user_message").map((r) => (r.payload as { body: string }).body);
    expect(kinds).toEqual(["first question", "second question, edited"]);
    expect(await page.locator("#error").textContent()).toBe("");
    expect(errors).toEqual([]);
    await page.close();
  });

  it("a dropped image uploads too; a dropped text file is refused in words and nothing is uploaded", async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    await page.goto(`${server.url}/?instance=drop`);
    await expect.poll(() => page.locator("#instance").inputValue(), POLL).toBe("drop");
    await give(page, "drop", [{ name: "notes.txt", type: "text/plain", base64: Buffer.from("hello").toString("base64") }]);
    await expect.poll(() => page.locator("#error").textContent(), POLL).toMatch(/Only images/);
    expect(await page.locator("#attachments .attachment").count()).toBe(0);
    const image = png(11);
    await give(page, "drop", [image.file]);
    await expect.poll(() => page.locator("#attachments .attachment").getAttribute("data-state"), POLL).toBe("ready");
    await page.fill("#message", "look");
    await page.click("#send");
    await expect.poll(() => settled(page).count(), POLL).toBe(1);
    expect((await assistantTexts(page))[0]).toContain(image.digest.slice("sha256:".length, "sha256:".length + 12));
    await page.close();
  });
});
