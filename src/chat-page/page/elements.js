// Small DOM builders of the chat page: a text span, a preformatted block, a select's options, a
// row of the submissions table.
import { statusWords } from "./words.js";

export function span(className, text) {
  const s = document.createElement("span");
  s.className = className;
  s.textContent = text;
  return s;
}

export function pre(text) {
  const p = document.createElement("pre");
  p.textContent = text;
  return p;
}

export function options(select, values, selected) {
  select.replaceChildren(
    ...values.map((value) => {
      const option = document.createElement("option");
      option.value = option.textContent = value;
      option.selected = value === selected;
      return option;
    }),
  );
}

/** A row of the submissions table; `retry`: why it waits for its next try, when it does (ADR 0053). */
export function submissionRow(s, retry = s.retry) {
  const row = document.createElement("tr");
  row.dataset.id = s.id;
  row.dataset.status = s.status;
  if (retry && s.status !== "settled") row.dataset.retry = retry.reason;
  if (s.outcome) row.dataset.outcome = s.outcome.errorCode ?? s.outcome.status;
  const took = s.settledAt ? `${((s.settledAt - s.createdAt) / 1000).toFixed(1)} s` : "";
  const tokens = s.outcome?.usage ? s.outcome.usage.totalTokens.toLocaleString("en") : "";
  const when = new Date(s.createdAt).toLocaleTimeString();
  for (const text of [when, statusWords(s, retry), String(s.attemptCount), took, tokens]) {
    const cell = document.createElement("td");
    cell.textContent = text;
    row.append(cell);
  }
  const error = s.outcome?.error ?? (retry && s.status !== "settled" ? retry.error : undefined);
  row.title = `${s.id}${error ? `\n${error}` : ""}`;
  return row;
}
