// Assistant text as markdown. Model output is untrusted: markdown-it leaves raw HTML as text
// (`html: false`) and refuses javascript:/vbscript:/data: links, DOMPurify then drops anything
// executable that could still get through, and the page's Content-Security-Policy runs no inline
// script and loads no image from elsewhere (a markdown image cannot send the conversation away).
import DOMPurify from "dompurify";
import MarkdownIt from "markdown-it";

const md = new MarkdownIt({ html: false, linkify: true, breaks: true });

// Links open in a new tab without handing it this page (window.opener).
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

const PURIFY = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "object", "embed"],
  FORBID_ATTR: ["style"],
  ADD_ATTR: ["target"],
};

/** Renders markdown text into `element` (replacing its content), sanitized. */
export function renderMarkdown(element, text) {
  element.innerHTML = DOMPurify.sanitize(md.render(text).trimEnd(), PURIFY);
  // A code block scrolls sideways: it takes the keyboard's focus so it can be scrolled without a mouse.
  for (const block of element.querySelectorAll("pre")) block.tabIndex = 0;
}
