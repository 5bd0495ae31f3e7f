// The console (ADR 0054): conversations across agents and instances, a submission's timeline,
// the approvals inbox, failures grouped by reason, and numbers, all from the harness's HTTP API.
// Plain ES modules: no build step. Views are addressed by the fragment (#list, #sub/…, …).
import { ApiError, activityAll, answerCallback, api, callTool, cancel, decide, enc, records, retry, setToken, submission } from "./api.js";
import { buildTimeline } from "./timeline.js";

const main = document.getElementById("main");
const STATES = ["", "running", "queued", "waiting_person", "waiting_callback", "waiting_child", "waiting_time", "succeeded", "failed", "cancelled"];
const STATE_WORDS = { waiting_person: "waiting for a person", waiting_callback: "waiting for a callback", waiting_child: "waiting for a child", waiting_time: "waiting for its time" };

/** An element: `h("td", {class: "num"}, "12")`. Text is always set as text, never as HTML. */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    // Through the CSSOM: the page's CSP refuses style attributes.
    else if (k === "style") Object.assign(el.style, v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null) el.append(c instanceof Node ? c : String(c));
  return el;
}

const when = (t) => (t ? new Date(t).toLocaleString() : "");
const clock = (t) => new Date(t).toLocaleTimeString();
const tokensOf = (row) => (row.outcome?.usage ? row.outcome.usage.input + row.outcome.usage.output : undefined);
const dollars = (n) => (n === undefined ? "" : `$${n < 0.01 ? n.toFixed(4) : n.toFixed(2)}`);
const stateBadge = (state) => h("span", { class: `state ${state}` }, STATE_WORDS[state] ?? state);
const subLink = (row) => `#sub/${enc(row.agent)}/${enc(row.instance)}/${enc(row.id)}`;

function show(...nodes) {
  main.replaceChildren(...nodes.flat().filter((n) => n !== undefined && n !== null && n !== ""));
}

/** A failed call: the token form on 401, else the error in words. */
function failed(err) {
  if (err instanceof ApiError && err.status === 401) {
    const form = document.getElementById("token-form");
    form.hidden = false;
    document.getElementById("token").focus();
    return show(h("p", { class: "error", role: "alert" }, "The API wants a token: enter the operator's token below."));
  }
  if (err instanceof ApiError && err.status === 403) {
    return show(h("p", { class: "error", role: "alert" }, "Only the operator may use the console (403 forbidden)."));
  }
  show(h("p", { class: "error", role: "alert" }, `Could not load: ${err.message}`));
}

// ---- conversations -------------------------------------------------------------------------

const WINDOWS = { "": "any time", 3600000: "last hour", 86400000: "last day", 604800000: "last week" };

async function listView(params) {
  const filters = { agent: params.get("agent") ?? "", state: params.get("state") ?? "", window: params.get("window") ?? "" };
  const form = h(
    "form",
    { class: "filters", onsubmit: (e) => { e.preventDefault(); const q = new URLSearchParams(new FormData(form)); location.hash = `list?${q}`; } },
    h("label", {}, "Agent", h("input", { name: "agent", value: filters.agent, size: 12 })),
    h("label", {}, "State", h("select", { name: "state" }, STATES.map((s) => h("option", { value: s, selected: s === filters.state }, s === "" ? "any" : (STATE_WORDS[s] ?? s))))),
    h("label", {}, "Activity", h("select", { name: "window" }, Object.entries(WINDOWS).map(([v, w]) => h("option", { value: v, selected: v === filters.window }, w)))),
    h("button", { type: "submit" }, "Filter"),
  );
  show(h("h2", {}, "Conversations"), form, h("p", { class: "muted" }, "Loading…"));
  const query = { agent: filters.agent, state: filters.state, since: filters.window ? Date.now() - Number(filters.window) : undefined };
  const rows = await activityAll(query, 300);
  // A conversation is its session: its newest activity stands for it.
  const seen = new Set();
  const latest = rows.filter((r) => {
    const key = `${r.agent}/${r.instance}/${r.session}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const table = h(
    "table",
    { class: "rows", "aria-label": "Conversations" },
    h("thead", {}, h("tr", {}, ["Last activity", "Conversation", "State", "Last message", "Tokens", "Cost"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, latest.map((r) =>
      h("tr", { "data-submission": r.id },
        h("td", {}, h("a", { class: "row-link", href: subLink(r) }, when(r.updatedAt))),
        h("td", {}, `${r.agent}/${r.instance}`, r.session === "default" ? "" : ` · ${r.session}`),
        h("td", {}, stateBadge(r.state)),
        h("td", { class: "preview" }, r.preview ?? `(${r.kind})`),
        h("td", { class: "num" }, tokensOf(r) ?? ""),
        h("td", { class: "num" }, dollars(r.outcome?.cost?.total)),
      ))),
  );
  show(h("h2", {}, "Conversations"), form, latest.length === 0 ? h("p", { class: "muted" }, "Nothing matches.") : table);
}

// ---- a submission's timeline ---------------------------------------------------------------

async function submissionView(agent, instance, id) {
  show(h("p", { class: "muted" }, "Loading…"));
  const detail = await submission(agent, instance, id);
  const { records: log } = await records(agent, instance, detail.session);
  const row = { ...detail, agent, instance };
  const tl = buildTimeline(detail, log);
  const state = detail.status === "settled" ? (detail.outcome?.status === "succeeded" ? "succeeded" : /cancelled/.test(detail.outcome?.errorCode ?? "") ? "cancelled" : "failed") : detail.status;
  const facts = h("dl", { class: "facts" },
    h("dt", {}, "Conversation"), h("dd", {}, `${agent}/${instance} · session ${detail.session}`),
    h("dt", {}, "State"), h("dd", {}, stateBadge(state)),
    h("dt", {}, "Input"), h("dd", {}, detail.input?.body ?? ""),
    h("dt", {}, "Admitted"), h("dd", {}, when(detail.createdAt)),
    h("dt", {}, "Attempts"), h("dd", { "data-attempts": detail.attempts.length }, String(detail.attempts.length)),
    h("dt", {}, "Outcome"), h("dd", {}, detail.outcome ? `${detail.outcome.status}${detail.outcome.errorCode ? ` (${detail.outcome.errorCode})` : ""}${detail.outcome.error ? `: ${detail.outcome.error}` : ""}` : "not settled"),
    h("dt", {}, "Tokens"), h("dd", {}, `${tl.usage.input} in / ${tl.usage.output} out`),
    h("dt", {}, "Cost"), h("dd", {}, dollars(detail.outcome?.cost?.total ?? tl.usage.cost) || "no prices"),
  );
  const actions = h("div", { class: "actions" });
  const act = (label, fn, cls) => h("button", { class: cls, onclick: async (e) => { e.target.disabled = true; try { await fn(); } catch (err) { alert(err.message); } render(); } }, label);
  if (detail.status !== "settled") actions.append(act("Cancel", () => cancel(row), "danger"));
  if (state === "failed" || state === "cancelled") actions.append(act("Retry", async () => { const r = await retry(row); location.hash = `sub/${enc(agent)}/${enc(instance)}/${enc(r.submissionId)}`; }));
  for (const w of detail.waitingFor ?? []) {
    if (w.kind !== "approval") continue;
    actions.append(act(`Approve ${w.toolName}`, () => decide(row, w.callId, true), "primary"), act(`Deny ${w.toolName}`, () => decide(row, w.callId, false, "denied from the console"), "danger"));
  }
  const callbacks = (detail.waitingFor ?? []).filter((w) => w.kind === "callback").map((w) => callbackForm(row, w));
  show(
    h("p", {}, h("a", { href: "#list" }, "← Conversations")),
    h("h2", {}, `Submission ${detail.id}`),
    facts,
    actions,
    callbacks,
    drawTimeline(tl),
    eventList(tl, agent),
  );
  // Watch it run: while it is unsettled and shown, it is read again each second and drawn again
  // when something moved (so a reader's scroll stays put otherwise).
  if (detail.status !== "settled") {
    const shown = location.hash;
    const seen = `${detail.updatedAt} ${log.length}`;
    const watch = async () => {
      if (location.hash !== shown) return;
      try {
        const now = await submission(agent, instance, id);
        const again = await records(agent, instance, now.session);
        if (`${now.updatedAt} ${again.records.length}` !== seen) return render();
      } catch {
        // shown as it was; the next look may succeed
      }
      setTimeout(watch, 1_000);
    };
    setTimeout(watch, 1_000);
  }
}

/** A call waiting for a callback, answered by hand (for testing): a JSON result or an error. */
function callbackForm(row, wait) {
  const id = `answer-${wait.callId}`;
  const text = h("textarea", { id, rows: 3, cols: 40, placeholder: '{"tracking": "1Z…"}' });
  const problem = h("p", { class: "error", role: "alert" });
  const send = async (answer) => {
    try {
      await answerCallback(row, wait.callId, answer);
      render();
    } catch (err) {
      problem.textContent = err.message;
    }
  };
  return h("form", { class: "callback", "data-call": wait.callId, onsubmit: (e) => {
      e.preventDefault();
      let result;
      try {
        result = JSON.parse(text.value);
      } catch {
        problem.textContent = "The result must be JSON.";
        return;
      }
      void send({ result });
    } },
    h("label", { for: id }, `Answer the callback of ${wait.toolName} by hand (its result, as JSON)`),
    text,
    h("div", { class: "actions" },
      h("button", { type: "submit", class: "primary" }, "Answer"),
      h("button", { type: "button", class: "danger", onclick: () => void send({ error: text.value.trim() || "failed (answered from the console)" }) }, "Answer with an error")),
    problem);
}

const LANES = ["attempts", "model", "tools", "waits", "outcome"];

/** The spans in lanes, each placed by its start and length in the submission's span of time. */
function drawTimeline(tl) {
  const total = Math.max(1, tl.end - tl.start);
  const pct = (t) => `${(((t - tl.start) / total) * 100).toFixed(2)}%`;
  return h("section", { class: "timeline", "aria-label": "Timeline" },
    h("div", { class: "axis" }, h("span", {}, clock(tl.start)), h("span", {}, `${((tl.end - tl.start) / 1000).toFixed(1)} s`), h("span", {}, clock(tl.end))),
    LANES.filter((lane) => tl.spans.some((s) => s.lane === lane)).map((lane) =>
      h("div", { class: "lane" },
        h("div", { class: "lane-name" }, lane),
        h("div", { class: "track" }, tl.spans.filter((s) => s.lane === lane).map((s) =>
          h("span", { class: `span ${s.kind}`, style: { left: pct(s.start), width: `${(((s.end - s.start) / total) * 100).toFixed(2)}%` }, title: `${s.label}: ${s.detail ?? ""}` }))))),
  );
}

/** The same spans as a list, in time order: what each was, readable at any width. */
function eventList(tl, agent) {
  const spans = [...tl.spans].sort((a, b) => a.start - b.start || LANES.indexOf(a.lane) - LANES.indexOf(b.lane));
  return h("ol", { class: "events", "aria-label": "Events" }, spans.map((s) =>
    h("li", { "data-kind": s.kind },
      h("span", { class: "t" }, `+${((s.start - tl.start) / 1000).toFixed(2)} s`),
      h("span", { class: "k" }, s.label),
      h("span", { class: "d" }, s.detail ?? "", s.child ? [" · ", h("a", { href: `#sub/${enc(s.child.agent)}/${enc(s.child.childInstance)}/${enc(s.child.childSubmissionId)}` }, "open the child's timeline")] : ""),
    )));
}

// ---- approvals inbox -------------------------------------------------------------------------

async function approvalsView() {
  show(h("h2", {}, "Approvals"), h("p", { class: "muted" }, "Loading…"));
  const waiting = await activityAll({ state: "waiting_person" }, 200);
  const items = [];
  const sessions = new Set();
  for (const row of waiting) {
    const key = `${row.agent}/${row.instance}/${row.session}`;
    if (sessions.has(key)) continue;
    sessions.add(key);
    const { approvals } = await api(`/agents/${enc(row.agent)}/${enc(row.instance)}/approvals?session=${enc(row.session)}`);
    for (const a of approvals) items.push({ ...a, row: { ...row, id: a.submissionId } });
  }
  const list = h("ul", { class: "inbox", "aria-label": "Pending approvals" }, items.map((a) =>
    h("li", { class: "card", "data-call": a.callId },
      h("div", {}, h("strong", {}, a.toolName), ` · ${a.row.agent}/${a.row.instance}`, " · ", h("a", { href: subLink(a.row) }, "timeline")),
      h("pre", {}, JSON.stringify(a.args ?? {}, null, 2)),
      h("div", { class: "muted" }, `expires ${when(a.expiresAt)}`),
      h("div", { class: "actions" },
        h("button", { class: "primary", onclick: async () => { await decide(a.row, a.callId, true); render(); } }, "Approve"),
        h("button", { class: "danger", onclick: async () => { await decide(a.row, a.callId, false, "denied from the console"); render(); } }, "Deny")),
    )));
  show(h("h2", {}, "Approvals"), items.length === 0 ? h("p", { class: "muted" }, "No call waits for a person.") : list);
}

// ---- failures --------------------------------------------------------------------------------

async function failuresView() {
  show(h("h2", {}, "Failures"), h("p", { class: "muted" }, "Loading…"));
  const rows = await activityAll({ state: "failed" }, 500);
  const groups = new Map();
  for (const r of rows) {
    const reason = `${r.outcome?.errorCode ?? "failed"}: ${(r.outcome?.error ?? r.lastError ?? "").split("\n")[0].slice(0, 160)}`;
    if (!groups.has(reason)) groups.set(reason, []);
    groups.get(reason).push(r);
  }
  show(
    h("h2", {}, "Failures"),
    rows.length === 0 ? h("p", { class: "muted" }, "No failed submission.") : "",
    [...groups].map(([reason, list]) =>
      h("section", { class: "group", "aria-label": reason },
        h("h3", {}, `${reason} (${list.length})`),
        h("ul", {}, list.map((r) => h("li", {}, h("a", { href: subLink(r) }, `${when(r.updatedAt)} · ${r.agent}/${r.instance} · ${r.preview ?? r.id}`)))))),
  );
}

// ---- numbers ---------------------------------------------------------------------------------

function percentile(sorted, p) {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function numbersView() {
  show(h("h2", {}, "Numbers"), h("p", { class: "muted" }, "Loading…"));
  const now = Date.now();
  const sections = [];
  for (const [label, span] of [["Last hour", 3_600_000], ["Last day", 86_400_000]]) {
    const rows = await activityAll({ since: now - span }, 2000);
    const admitted = rows.filter((r) => r.createdAt >= now - span);
    const settled = rows.filter((r) => r.status === "settled" && r.kind !== "compact");
    const latencies = settled.map((r) => r.updatedAt - r.createdAt).sort((a, b) => a - b);
    const perAgent = new Map();
    for (const r of settled) {
      const a = perAgent.get(r.agent) ?? { runs: 0, tokens: 0, cost: 0 };
      a.runs++;
      a.tokens += tokensOf(r) ?? 0;
      a.cost += r.outcome?.cost?.total ?? 0;
      perAgent.set(r.agent, a);
    }
    const ms = (v) => (v === undefined ? "–" : `${(v / 1000).toFixed(2)} s`);
    sections.push(h("section", { "aria-label": label },
      h("h3", {}, label),
      h("div", { class: "cards" },
        h("div", { class: "card" }, h("div", { class: "muted" }, "Submissions / min"), h("div", { class: "big", "data-number": "rate" }, (admitted.length / (span / 60_000)).toFixed(2))),
        h("div", { class: "card" }, h("div", { class: "muted" }, "Settled"), h("div", { class: "big", "data-number": "settled" }, String(settled.length))),
        h("div", { class: "card" }, h("div", { class: "muted" }, "Turn latency p50"), h("div", { class: "big", "data-number": "p50" }, ms(percentile(latencies, 50)))),
        h("div", { class: "card" }, h("div", { class: "muted" }, "Turn latency p99"), h("div", { class: "big", "data-number": "p99" }, ms(percentile(latencies, 99))))),
      h("table", { "aria-label": `Per agent, ${label.toLowerCase()}` },
        h("thead", {}, h("tr", {}, ["Agent", "Settled", "Tokens", "Cost"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, [...perAgent].map(([agent, a]) => h("tr", { "data-agent": agent }, h("td", {}, agent), h("td", { class: "num" }, a.runs), h("td", { class: "num" }, a.tokens), h("td", { class: "num" }, dollars(a.cost)))))),
    ));
  }
  show(h("h2", {}, "Numbers"), h("p", { class: "muted" }, "From the settled submissions the log records (turn latency: admission to settlement)."), ...sections);
}

// ---- tools (harness dev only) ---------------------------------------------------------------

function toolsView() {
  const field = (name, label, value = "") => h("label", {}, label, h("input", { name, value, size: 14, required: true }));
  const args = h("textarea", { name: "args", rows: 4, cols: 40, "aria-label": "Arguments (JSON)" }, "{}");
  const out = h("pre", { class: "tool-result", "aria-live": "polite" });
  const form = h("form", { class: "filters", onsubmit: async (e) => {
      e.preventDefault();
      const data = new FormData(form);
      let parsed;
      try {
        parsed = JSON.parse(String(data.get("args") || "{}"));
      } catch {
        out.textContent = "The arguments must be JSON.";
        return;
      }
      out.textContent = "Calling…";
      try {
        const r = await callTool(String(data.get("agent")), String(data.get("instance")), String(data.get("tool")), parsed);
        const text = r.content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("\n");
        out.textContent = `${r.isError ? "error" : "result"} (${r.durationMs} ms):\n${text}${r.details === undefined ? "" : `\n\ndetails: ${JSON.stringify(r.details, null, 2)}`}`;
      } catch (err) {
        out.textContent = err.message;
      }
    } },
    field("agent", "Agent"), field("instance", "Instance", "dev"), field("tool", "Tool"), args,
    h("button", { type: "submit", class: "primary" }, "Call"));
  show(h("h2", {}, "Call a tool"), h("p", { class: "muted" }, "Runs one of an agent's tools with your arguments, outside any run and without its approval (harness dev only)."), form, out);
}

// ---- routing ---------------------------------------------------------------------------------

async function render() {
  const hash = location.hash.replace(/^#/, "") || "list";
  const [path, query = ""] = hash.split("?");
  const parts = path.split("/").map(decodeURIComponent);
  const view = parts[0];
  for (const a of document.querySelectorAll("nav a")) {
    if (a.dataset.view === (view === "sub" ? "list" : view)) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  try {
    if (view === "sub") await submissionView(parts[1], parts[2], parts[3]);
    else if (view === "approvals") await approvalsView();
    else if (view === "failures") await failuresView();
    else if (view === "numbers") await numbersView();
    else if (view === "tools") toolsView();
    else await listView(new URLSearchParams(query));
  } catch (err) {
    failed(err);
  }
}

document.getElementById("token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  setToken(document.getElementById("token").value.trim());
  e.target.hidden = true;
  render();
});
window.addEventListener("hashchange", render);

render();
