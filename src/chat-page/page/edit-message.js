// Edit on a user message: "edit an earlier message and try again" (ADR 0034's fork). The edited
// text, with the message's attachments, goes to POST …/fork from the record before the message,
// which copies the history up to there into a new session and dispatches the edit there; the page
// then switches to that session. The original conversation stays as it was.

/**
 * The Edit button of a dispatched user message, and its form in place of the text.
 * @param {HTMLElement} el the message's element
 * @param {{text: string, recordId: string, attachments?: object[]}} item
 * @param {(item: object, body: string) => Promise<void>} submit forks and switches; throws to keep the form open
 */
export function drawEditable(el, item, submit) {
  const edit = Object.assign(document.createElement("button"), { type: "button", className: "edit", textContent: "Edit" });
  edit.title = "Edit this message and try again in a new session (this one stays as it is)";
  edit.addEventListener("click", () => {
    const form = document.createElement("form");
    form.className = "edit-form";
    const box = Object.assign(document.createElement("textarea"), { value: item.text, rows: 3, name: "body" });
    box.setAttribute("aria-label", "Edited message");
    const send = Object.assign(document.createElement("button"), { type: "submit", className: "primary", textContent: "Send edit" });
    const cancel = Object.assign(document.createElement("button"), { type: "button", textContent: "Cancel" });
    const restore = () => {
      form.replaceWith(...parts);
    };
    cancel.addEventListener("click", restore);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const body = box.value.trim();
      if (body === "") return;
      send.disabled = true;
      submit(item, body).then(
        () => {},
        () => (send.disabled = false),
      );
    });
    form.append(box, send, cancel);
    const parts = [...el.childNodes];
    el.replaceChildren(form);
    box.focus();
  });
  el.append(edit);
}
