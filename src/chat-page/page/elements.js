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

export function submissionRow(s) {
  const row = document.createElement("tr");
  row.dataset.id = s.id;
  row.dataset.status = s.status;
  if (s.outcome) row.dataset.outcome = s.outcome.errorCode ?? s.outcome.status;
  const took = s.settledAt ? `${((s.settledAt - s.createdAt) / 1000).toFixed(1)} s` : "";
  const tokens = s.outcome?.usage ? s.outcome.usage.totalTokens.toLocaleString("en") : "";
  const when = new Date(s.createdAt).toLocaleTimeString();
  for (const text of [when, statusWords(s), String(s.attemptCount), took, tokens]) {
    const cell = document.createElement("td");
    cell.textContent = text;
    row.append(cell);
  }
  row.title = `${s.id}${s.outcome?.error ? `\n${s.outcome.error}` : ""}`;
  return row;
}
