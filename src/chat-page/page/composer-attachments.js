// Images pasted or dropped into the composer: each is uploaded at once (POST /attachments, or the
// direct upload for a large one where the server offers it: the client's uploadAttachment logic)
// and shown as a chip; Send references the uploaded ones in its dispatch (ADR 0034).
import { attachmentUpload } from "../../client/attachment-upload.ts";
import { withToken } from "./sign-in.js";

/** The image types the page sends (the server's attachment policy may refuse one, and says why). */
const IMAGE = /^image\/(png|jpeg|gif|webp)$/;

/**
 * The client's upload over the page's own fetch (same origin: the type and the tab's bearer token);
 * the direct upload's form goes to blob storage over the bare fetch, with no token.
 */
const upload = attachmentUpload(
  (method, url, init) =>
    fetch(url, {
      method,
      headers: withToken(init.bytes ? { "content-type": init.bytes.contentType } : init.body === undefined ? {} : { "content-type": "application/json" }),
      body: init.bytes ? init.bytes.data : init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: init.signal,
    }),
  (...args) => fetch(...args),
  "",
);

function sizeText(bytes) {
  return bytes < 1024 ? `${bytes} B` : bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(0)} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * The composer's attachments: `add(files)` uploads the images among them, `refs()` are the
 * uploaded ones, `busy` while one is still uploading, `clear()` after a send.
 */
export class PendingAttachments {
  /** @param {HTMLElement} list where the chips go @param {(text: string) => void} showError */
  constructor(list, showError) {
    this.list = list;
    this.showError = showError;
    /** @type {{file: File, ref?: object, chip: HTMLElement}[]} */
    this.items = [];
  }

  get busy() {
    return this.items.some((i) => i.ref === undefined);
  }

  refs() {
    return this.items.filter((i) => i.ref !== undefined).map((i) => i.ref);
  }

  clear() {
    this.items = [];
    this.list.replaceChildren();
    this.list.hidden = true;
  }

  /** Uploads the images among `files`; anything else is refused with a word, not sent. */
  add(files) {
    const images = [...files].filter((f) => IMAGE.test(f.type));
    if (images.length < files.length) this.showError("Only images (PNG, JPEG, GIF, WebP) can be pasted or dropped here.");
    for (const file of images) void this.#upload(file);
  }

  async #upload(file) {
    const chip = document.createElement("span");
    chip.className = "attachment";
    chip.dataset.state = "uploading";
    const label = document.createElement("span");
    label.textContent = `${file.name || "image"} (${sizeText(file.size)}) uploading…`;
    const remove = Object.assign(document.createElement("button"), { type: "button", textContent: "×", title: "Remove this image" });
    remove.setAttribute("aria-label", `Remove ${file.name || "image"}`);
    const entry = { file, chip };
    remove.addEventListener("click", () => {
      this.items = this.items.filter((i) => i !== entry);
      chip.remove();
      this.list.hidden = this.items.length === 0;
    });
    chip.append(label, remove);
    this.items.push(entry);
    this.list.append(chip);
    this.list.hidden = false;
    try {
      entry.ref = await upload(file, file.type);
      chip.dataset.state = "ready";
      chip.dataset.digest = entry.ref.digest;
      label.textContent = `${file.name || "image"} (${sizeText(file.size)})`;
    } catch (err) {
      this.items = this.items.filter((i) => i !== entry);
      chip.remove();
      this.list.hidden = this.items.length === 0;
      const why = err && typeof err === "object" && "message" in err ? err.message : String(err);
      this.showError(`Could not upload ${file.name || "the image"}: ${why}`);
    }
  }
}

/** Wires paste and drop on `target` (the composer) to `pending`. */
export function acceptImages(target, pending) {
  target.addEventListener("paste", (e) => {
    const files = [...(e.clipboardData?.files ?? [])];
    if (files.length === 0) return;
    e.preventDefault();
    pending.add(files);
  });
  target.addEventListener("dragover", (e) => {
    if (![...(e.dataTransfer?.types ?? [])].includes("Files")) return;
    e.preventDefault();
    target.dataset.dropping = "true";
  });
  target.addEventListener("dragleave", () => delete target.dataset.dropping);
  target.addEventListener("drop", (e) => {
    delete target.dataset.dropping;
    const files = [...(e.dataTransfer?.files ?? [])];
    if (files.length === 0) return;
    e.preventDefault();
    pending.add(files);
  });
}
