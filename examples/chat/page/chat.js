// The chat page: a plain ES module on the harness's own routes (fetch + EventSource, no build).
// State is the session's records, folded into a MessageView; everything on screen is drawn from it.
import { MessageView } from "./message-view.js";

const AGENT = "chat";
const params = new URLSearchParams(location.search);
const instance = params.get("instance") || "demo";
const base = `/agents/${encodeURIComponent(AGENT)}/${encodeURIComponent(instance)}`;
const sessionsKey = `harness-chat:${instance}:sessions`;
const SESSION_RULE = /^[A-Za-z0-9._:~-]{1,128}$/;
const RECORD_KINDS = [
  "conversation_created",
  "user_message",
  "signal",
  "assistant_message_started",
  "assistant_text_delta",
  "assistant_thinking_delta",
  "assistant_tool_call",
  "tool_outcome",
  "assistant_message_completed",
  "compaction",
  "submission_settled",
  "task_spawned",
];

const $ = (id) => document.getElementById(id);

/** The page's state: the current session, the view of its records (the log, in order) and its stream. */
const state = {
  session: "default",
  view: new MessageView(),
  lastId: "",
  source: null,
  /** Submissions this tab dispatched whose settlement it has not seen yet. */
  awaiting: new Set(),
  /** The newest submissions listing (for Cancel). */
  submissions: [],
  reopenDelay: 250,
  drawScheduled: false,
  /** A pending re-read of the listing while a row is still `terminalizing`. */
  listingRecheck: null,
};

/** How soon the listing is read again while a submission is between its settlement record and its row's finalize. */
const TERMINALIZING_RECHECK_MS = 300;

// ---- rendering: records → view items → DOM ------------------------------------------------

// The client's MessageView (src/client/message-view.ts, served with its types stripped) is the
// only place records are interpreted: it also drops an abandoned attempt's unfinished message
// as soon as the next attempt's first record arrives (ADR 0020).
function draw() {
  state.drawScheduled = false;
  const box = $("conversation");
  const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  box.replaceChildren(...state.view.items.map(element));
  if (atBottom) box.scrollTop = box.scrollHeight;
}

function scheduleDraw() {
  if (state.drawScheduled) return;
  state.drawScheduled = true;
  requestAnimationFrame(draw);
}

function element(item) {
  const el = document.createElement("div");
  el.className = "item";
  el.dataset.kind = item.kind;
  switch (item.kind) {
    case "user":
      if (item.origin) el.append(span("origin", item.origin));
      el.append(item.text);
      break;
    case "assistant":
      el.dataset.done = String(item.done);
      el.dataset.interrupted = String(item.interrupted);
      el.textContent = item.text;
      break;
    case "tool":
      el.dataset.error = String(item.isError);
      el.dataset.state = item.outcome === undefined ? "running" : "done";
      el.textContent = `⚙ ${item.name}(${JSON.stringify(item.args ?? {})})${item.outcome === undefined ? " …" : `\n→ ${item.outcome}`}`;
      break;
    case "compaction":
      el.dataset.kind = "note";
      el.textContent = `conversation compacted: ${item.text}`;
      break;
    case "task":
      el.dataset.kind = "note";
      el.textContent = `subagent started: ${item.text}`;
      break;
    case "settled":
      el.dataset.status = item.status;
      el.textContent = `— ${item.status}${item.errorCode ? ` [${item.errorCode}]` : ""}${item.error ? ` ${item.error}` : ""}${
        item.usage ? ` · ${item.usage.totalTokens} tokens` : ""
      }`;
      break;
  }
  return el;
}

function span(className, text) {
  const s = document.createElement("span");
  s.className = className;
  s.textContent = text;
  return s;
}

// ---- the stream ----------------------------------------------------------------------------

/**
 * Follows the session's log from the last record seen. The server ends a stream once the
 * session is idle and caught up; the EventSource then reconnects by itself (Last-Event-ID) and
 * gets 204, which closes it for good: an idle tab does not poll. Sending reopens it.
 */
function openStream() {
  if (state.source) return;
  const query = new URLSearchParams({ session: state.session });
  if (state.lastId) query.set("lastEventId", state.lastId);
  const source = new EventSource(`${base}?${query}`);
  state.source = source;
  setStreamState("connecting");
  source.onopen = () => setStreamState("open");
  for (const kind of RECORD_KINDS) source.addEventListener(kind, (e) => onRecord(JSON.parse(e.data)));
  source.onerror = () => {
    if (source.readyState !== EventSource.CLOSED) return setStreamState("reconnecting");
    // 204 (idle and caught up), 404 (no conversation yet) or a failure: closed for good.
    if (state.source === source) state.source = null;
    setStreamState("closed");
    // Sent while the stream was closing: follow it until it settles.
    if (state.awaiting.size > 0) {
      setTimeout(openStream, state.reopenDelay);
      state.reopenDelay = Math.min(state.reopenDelay * 2, 5_000);
    }
  };
}

function closeStream() {
  state.source?.close();
  state.source = null;
  setStreamState("closed");
}

function setStreamState(text) {
  document.body.dataset.stream = text;
  $("stream-state").textContent = `stream ${text}`;
}

function onRecord(record) {
  if (record.session !== state.session) return;
  if (state.lastId && record.id <= state.lastId) return;
  state.view.apply(record);
  state.lastId = record.id;
  state.reopenDelay = 250;
  if (record.kind === "submission_settled") {
    state.awaiting.delete(record.submissionId);
    void refreshSubmissions();
  }
  scheduleDraw();
}

// ---- requests ------------------------------------------------------------------------------

async function call(method, path, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const json = text === "" ? {} : JSON.parse(text);
  if (!res.ok) throw new Error(`${json.code ?? res.status}: ${json.error ?? text}`);
  return json;
}

async function act(what) {
  showError("");
  try {
    await what();
  } catch (err) {
    showError(err instanceof Error ? err.message : String(err));
  }
}

function showError(text) {
  $("error").textContent = text;
}

async function send() {
  const body = $("message").value.trim();
  if (body === "") return;
  const { submissionId } = await call("POST", "", { kind: "user", body, session: state.session });
  $("message").value = "";
  state.awaiting.add(submissionId);
  openStream();
  await refreshSubmissions();
}

async function steer() {
  const body = $("message").value.trim();
  if (body === "") throw new Error("type the steer message first");
  await call("POST", "/steer", { body, session: state.session });
  $("message").value = "";
}

/** The run to cancel: the newest unsettled submission of the session. */
async function cancel() {
  await refreshSubmissions();
  const target = state.submissions.find((s) => s.status !== "settled");
  if (!target) throw new Error("nothing to cancel: no submission in flight");
  await call("POST", `/submissions/${encodeURIComponent(target.id)}/cancel`, { reason: "cancelled from the chat page" });
  state.awaiting.add(target.id);
  openStream();
  await refreshSubmissions();
}

async function compact() {
  const { submissionId } = await call("POST", "/compact", { session: state.session });
  if (submissionId) state.awaiting.add(submissionId);
  openStream();
  await refreshSubmissions();
}

async function refreshSubmissions() {
  const session = state.session;
  const page = await call("GET", `/submissions?${new URLSearchParams({ session, limit: "20" })}`);
  if (session !== state.session) return;
  state.submissions = page.submissions;
  $("submissions").tBodies[0].replaceChildren(
    ...page.submissions.map((s) => {
      const row = document.createElement("tr");
      row.dataset.id = s.id;
      row.dataset.status = s.status;
      const outcome = s.outcome ? `${s.outcome.status}${s.outcome.errorCode ? ` [${s.outcome.errorCode}]` : ""}` : "";
      const tokens = s.outcome?.usage ? String(s.outcome.usage.totalTokens) : "";
      for (const text of [s.id.slice(-8), s.status + (s.cancelRequested && s.status !== "settled" ? " (cancelling)" : ""), String(s.attemptCount), outcome, tokens]) {
        const cell = document.createElement("td");
        cell.textContent = text;
        row.append(cell);
      }
      row.title = `${s.id} · created ${new Date(s.createdAt).toLocaleString()}`;
      return row;
    }),
  );
  // The settlement record is written before the row is finalized: a listing read on that record
  // can still say `terminalizing`, so it is read again until the row says `settled`.
  if (page.submissions.some((s) => s.status === "terminalizing") && state.listingRecheck === null) {
    state.listingRecheck = setTimeout(() => {
      state.listingRecheck = null;
      refreshSubmissions().catch(() => {}); // a background read: the next settlement reads it again
    }, TERMINALIZING_RECHECK_MS);
  }
}

// ---- sessions ------------------------------------------------------------------------------

function knownSessions() {
  try {
    const list = JSON.parse(localStorage.getItem(sessionsKey) ?? "[]");
    return Array.isArray(list) ? list.filter((s) => typeof s === "string" && SESSION_RULE.test(s)) : [];
  } catch {
    return [];
  }
}

function remember(session) {
  const list = knownSessions();
  if (!list.includes(session)) localStorage.setItem(sessionsKey, JSON.stringify([...list, session]));
}

function drawSessions() {
  const select = $("session");
  select.replaceChildren(
    ...["default", ...knownSessions().filter((s) => s !== "default")].map((s) => {
      const option = document.createElement("option");
      option.value = option.textContent = s;
      option.selected = s === state.session;
      return option;
    }),
  );
}

/** Shows `session` from its first record: closes the old stream, replays the whole log. */
function switchTo(session) {
  closeStream();
  state.session = session;
  state.view = new MessageView();
  state.lastId = "";
  state.awaiting.clear();
  state.submissions = [];
  remember(session);
  history.replaceState(null, "", `${location.pathname}${location.search}#session=${encodeURIComponent(session)}`);
  drawSessions();
  draw();
  openStream();
  void act(refreshSubmissions);
}

function sessionFromHash() {
  const session = new URLSearchParams(location.hash.slice(1)).get("session");
  return session && SESSION_RULE.test(session) ? session : "default";
}

// ---- wiring --------------------------------------------------------------------------------

$("agent").textContent = AGENT;
$("instance").textContent = instance;
$("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  void act(send);
});
$("message").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) {
    e.preventDefault();
    void act(send);
  }
});
$("steer").addEventListener("click", () => void act(steer));
$("cancel").addEventListener("click", () => void act(cancel));
$("compact").addEventListener("click", () => void act(compact));
$("session").addEventListener("change", (e) => switchTo(e.target.value));
$("new-session-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const name = $("new-session").value.trim();
  if (!SESSION_RULE.test(name)) return showError("a session name is 1-128 of A-Z a-z 0-9 . _ : ~ -");
  $("new-session").value = "";
  switchTo(name);
});
switchTo(sessionFromHash());
