// The chat page: one ES module, bundled with its libraries at build time (src/chat-page/assets.ts).
// State is the session's records, folded into the client's MessageView; everything on screen is
// drawn from it, so a reload or a session switch is a replay of the log.
import { MessageView } from "../../client/message-view.ts";
import { recordStream } from "../../client/record-stream.ts";
import { RECORD_KINDS } from "../../protocol/records.ts"; // one list: the page hears every kind the log holds
import { acceptImages, PendingAttachments } from "./composer-attachments.js";
import { Connection } from "./connection.js";
import { drawEditable } from "./edit-message.js";
import { options, pre, span, submissionRow } from "./elements.js";
import { knownSessions, remember, SESSION_RULE, sessionFromHash } from "./sessions.js";
import { renderMarkdown } from "./markdown.js";
import { SignIn, storedToken, takeTokenFromFragment, tokenClaim, withToken } from "./sign-in.js";
import { approvalWords, decisionRefusalWords, refusalWords, settlementWords, statusWords } from "./words.js";

/** How soon the listing is read again while a submission is between its settlement record and its row's finalize. */
const FINISHING_RECHECK_MS = 300;
/** Below this width the submissions panel starts folded away. */
const NARROW = "(max-width: 720px)";

const $ = (id) => document.getElementById(id);
// First, before anything reads the address: a sign-in page's `#access_token=…` is taken and
// cleared, and the tab goes back to the agent, instance and session it left from.
takeTokenFromFragment();
const params = new URLSearchParams(location.search);
/**
 * Whether the address named the instance. If not, a signed-in person's instance is their own (the
 * token's `instanceClaim`, `sub` by default: the default policy's owner), else "demo".
 */
const instanceNamed = params.has("instance");
/** The sign-in panel (made once the config names the sign-in page, if any). */
let signIn = null;

/** The page's state: where it points, the view of the session's records, and its stream. */
const state = {
  agent: "",
  instance: params.get("instance") || "demo",
  session: "default",
  view: new MessageView(),
  lastId: "",
  /** The ids of the records shown, in log order (an edit forks from the one before its message). */
  ids: [],
  source: null,
  /** Submissions this tab dispatched whose settlement it has not seen yet. */
  awaiting: new Set(),
  /** The newest submissions listing (for Cancel). */
  submissions: [],
  reopenDelay: 250,
  drawScheduled: false,
  listingRecheck: null,
};

const connection = new Connection($("banner"), () => {
  // Back after an outage: pick the stream up where it stopped, and read the listing again.
  openStream();
  void refreshSubmissions().catch(() => {});
});

/** Images pasted or dropped into the composer, uploaded and waiting for Send. */
const pending = new PendingAttachments($("attachments"), (text) => showError(text));
acceptImages($("composer"), pending);

const base = () => `/agents/${encodeURIComponent(state.agent)}/${encodeURIComponent(state.instance)}`;
const sessionsKey = () => `harness-chat:${state.agent}:${state.instance}:sessions`;

// ---- rendering: records → view items → DOM ------------------------------------------------

/** Each item's element, kept while the item is on screen so unchanged items are not rebuilt. */
const rendered = new WeakMap();

function draw() {
  state.drawScheduled = false;
  const box = $("conversation");
  const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  const elements = state.view.items.map(elementOf);
  // Re-inserting unchanged elements would take the focus from an approval's reason being typed.
  const same = elements.length === box.children.length && elements.every((el, i) => box.children[i] === el);
  if (!same) box.replaceChildren(...elements);
  if (atBottom) box.scrollTop = box.scrollHeight;
}

function scheduleDraw() {
  if (state.drawScheduled) return;
  state.drawScheduled = true;
  requestAnimationFrame(draw);
}

/** The item's element, updated in place; its markdown is rendered again only when its text changed. */
function elementOf(item) {
  let entry = rendered.get(item);
  if (!entry) {
    entry = { el: create(item), key: "" };
    rendered.set(item, entry);
  }
  const key = JSON.stringify(item);
  if (entry.key !== key) {
    entry.key = key;
    update(entry.el, item);
  }
  return entry.el;
}

function create(item) {
  const kind = item.kind === "compaction" || item.kind === "task" ? "note" : item.kind;
  const el = document.createElement(item.kind === "compaction" ? "details" : "div");
  el.className = "item";
  el.dataset.kind = kind;
  return el;
}

function update(el, item) {
  switch (item.kind) {
    case "user": {
      el.replaceChildren();
      if (item.origin) el.append(span("origin", item.origin === "followUp" ? "follow-up" : item.origin));
      el.append(span("text", item.text));
      if (item.attachments?.length) el.append(span("attachments", `${item.attachments.length} image${item.attachments.length > 1 ? "s" : ""} attached`));
      if (!item.origin) drawEditable(el, item, (edited, body) => act(() => forkEdit(edited, body), true));
      break;
    }
    case "assistant": {
      el.dataset.done = String(item.done);
      el.dataset.interrupted = String(item.interrupted);
      el.replaceChildren();
      if (item.thinking) {
        const thinking = document.createElement("details");
        thinking.className = "thinking";
        thinking.append(Object.assign(document.createElement("summary"), { textContent: "Thinking" }), span("text", item.thinking));
        el.append(thinking);
      }
      const body = document.createElement("div");
      body.className = "markdown";
      renderMarkdown(body, item.text);
      el.append(body);
      if (item.interrupted) el.append(span("interrupted", "This reply was interrupted."));
      break;
    }
    case "tool": {
      if (item.approval) {
        drawApproval(el, item);
        break;
      }
      const running = item.outcome === undefined;
      el.dataset.state = running ? "running" : "done";
      el.dataset.error = String(item.isError);
      const head = document.createElement("div");
      head.className = "tool-head";
      head.append(span("tool-name", item.name), span("tool-status", running ? "running…" : item.isError ? "failed" : "done"));
      const details = document.createElement("details");
      details.append(Object.assign(document.createElement("summary"), { textContent: running ? "Arguments" : "Arguments and result" }));
      details.append(pre(JSON.stringify(item.args ?? {}, null, 2)));
      if (!running) details.append(pre(item.outcome));
      el.replaceChildren(head, details);
      break;
    }
    case "compaction": {
      const summary = document.createElement("summary");
      summary.textContent = "Conversation compacted: older messages were replaced by a summary";
      const text = document.createElement("div");
      text.className = "markdown";
      renderMarkdown(text, item.text);
      el.replaceChildren(summary, text);
      break;
    }
    case "task":
      el.textContent = `Handed to a subagent: ${item.text}`;
      break;
    case "settled":
      el.dataset.status = item.status;
      if (item.errorCode) el.dataset.errorCode = item.errorCode;
      el.textContent = settlementWords(item);
      break;
  }
}

/**
 * A call that needs approval, as a card: the tool, its arguments in full (what the person
 * approves), and while it waits Approve / Deny with an optional reason; once decided, the decision
 * and then the call's outcome. Drawn from the records only, so another tab or a reload shows the
 * same state.
 */
function drawApproval(el, item) {
  const { approval } = item;
  el.dataset.approval = approval.state;
  el.dataset.error = String(item.isError);
  el.dataset.state = item.outcome !== undefined ? "done" : approval.state === "approved" ? "running" : "waiting";
  const head = document.createElement("div");
  head.className = "tool-head";
  const nameId = `tool-${item.callId.replace(/\s/g, "_")}`;
  const name = span("tool-name", item.name);
  name.id = nameId;
  head.append(name, span("tool-status", approvalWords(item)));
  const parts = [head, pre(JSON.stringify(item.args ?? {}, null, 2))];
  if (approval.state === "pending") {
    const form = document.createElement("form");
    form.className = "decision";
    const reason = document.createElement("input");
    reason.type = "text";
    reason.name = "reason";
    reason.maxLength = 4096;
    reason.placeholder = "Reason (optional)";
    reason.setAttribute("aria-label", `Reason for the decision on ${item.name} (optional)`);
    const approve = Object.assign(document.createElement("button"), { type: "submit", className: "primary approve", textContent: "Approve" });
    const deny = Object.assign(document.createElement("button"), { type: "button", className: "deny", textContent: "Deny" });
    for (const b of [approve, deny]) b.setAttribute("aria-describedby", nameId);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      void decide(item, true, reason.value, form);
    });
    deny.addEventListener("click", () => void decide(item, false, reason.value, form));
    form.append(reason, approve, deny);
    parts.push(form);
  } else if (item.outcome !== undefined) {
    const details = document.createElement("details");
    details.append(Object.assign(document.createElement("summary"), { textContent: "Result" }), pre(item.outcome));
    parts.push(details);
  }
  el.replaceChildren(...parts);
}

/** Sends a decision; the card changes when its `approval_decided` record arrives on the stream. */
async function decide(item, approved, reason, form) {
  for (const control of form.elements) control.disabled = true;
  const path = `/submissions/${encodeURIComponent(item.submissionId ?? "")}/approvals/${encodeURIComponent(item.callId)}`;
  const body = reason.trim() === "" ? { approved } : { approved, reason: reason.trim() };
  await act(async () => {
    try {
      await call("POST", path, body, decisionRefusalWords);
    } finally {
      // Decided here or elsewhere: follow the run (it resumes) and show the decision that stands.
      if (item.submissionId) state.awaiting.add(item.submissionId);
      openStream();
      void refreshSubmissions().catch(() => {});
    }
  });
  if (form.isConnected) for (const control of form.elements) control.disabled = false;
}

// ---- the stream ----------------------------------------------------------------------------

/**
 * Follows the session's log from the last record seen. The server ends a stream once the
 * session is idle and caught up; the EventSource then reconnects by itself (Last-Event-ID) and
 * gets 204, which closes it for good: an idle tab does not poll. Sending reopens it.
 */
function openStream() {
  if (state.source || !state.agent) return;
  if (storedToken()) return openStreamWithToken();
  const query = new URLSearchParams({ session: state.session });
  if (state.lastId) query.set("lastEventId", state.lastId);
  const source = new EventSource(`${base()}?${query}`);
  state.source = source;
  setLive(true);
  source.onopen = () => connection.reached();
  for (const kind of RECORD_KINDS) source.addEventListener(kind, (e) => onRecord(JSON.parse(e.data)));
  source.onerror = () => {
    // Still CONNECTING: the browser retries by itself. The server may only have ended the stream
    // (normal at idle), or be gone: the connection finds out which before saying anything.
    if (source.readyState !== EventSource.CLOSED) return connection.suspect();
    // 204 (idle and caught up), 404 (no conversation yet) or a refusal: closed for good.
    if (state.source === source) state.source = null;
    setLive(false);
    // Sent while the stream was closing: follow it until it settles.
    if (state.awaiting.size > 0) {
      setTimeout(openStream, state.reopenDelay);
      state.reopenDelay = Math.min(state.reopenDelay * 2, 5_000);
    }
  };
}

/** The client's stream reader over the page's fetch, with the tab's token on every (re)connect. */
const records = recordStream(
  (method, url, init) => fetch(url, { method, headers: withToken(init.headers), signal: init.signal, cache: "no-store" }),
  (agent, instance, suffix = "") => `/agents/${encodeURIComponent(agent)}/${encodeURIComponent(instance)}${suffix}`,
);

/**
 * {@link openStream} for a signed-in tab: an EventSource cannot send an Authorization header, so
 * the stream is read with fetch by the client's reader, which reconnects from the last record
 * itself and ends at the server's 204, as the EventSource does. A 401 asks for a sign-in again.
 */
function openStreamWithToken() {
  const controller = new AbortController();
  const source = { close: () => controller.abort() };
  state.source = source;
  setLive(true);
  const reading = records.stream(state.agent, state.instance, { session: state.session, after: state.lastId || undefined, signal: controller.signal });
  void (async () => {
    let refused = false;
    try {
      for await (const record of reading) onRecord(record);
    } catch (err) {
      if (controller.signal.aborted) return;
      if (err?.status === 401) {
        refused = true;
        signIn?.show();
      } else if (err?.code === "unreachable") {
        connection.suspect();
      }
      // 404 (no conversation yet) or another refusal: closed, as the EventSource's.
    }
    if (state.source !== source) return;
    state.source = null;
    setLive(false);
    if (!refused && state.awaiting.size > 0) {
      setTimeout(openStream, state.reopenDelay);
      state.reopenDelay = Math.min(state.reopenDelay * 2, 5_000);
    }
  })();
}

function closeStream() {
  state.source?.close();
  state.source = null;
  setLive(false);
}

function setLive(live) {
  document.body.dataset.stream = live ? "open" : "closed";
  $("stream-state").textContent = live ? "live" : "";
}

function onRecord(record) {
  connection.reached();
  if (record.session !== state.session) return;
  if (state.lastId && record.id <= state.lastId) return;
  state.view.apply(record);
  state.lastId = record.id;
  state.ids.push(record.id);
  state.reopenDelay = 250;
  if (record.kind === "submission_settled") {
    state.awaiting.delete(record.submissionId);
    void refreshSubmissions().catch(() => {});
  } else if (record.kind === "submission_retrying") {
    // Why it is not progressing: its row says it from the record now, the listing after.
    void refreshSubmissions().catch(() => {});
  } else if (record.kind === "approval_requested" || record.kind === "approval_decided") {
    // It parks (or resumes) after this record: the listing says what it waits for.
    void refreshSubmissions().catch(() => {});
  } else if (state.submissions.some((s) => s.id === record.submissionId && s.status === "queued")) {
    // It started running: the listing says so (read once, when the first record of the run arrives).
    state.submissions.find((s) => s.id === record.submissionId).status = "running";
    void refreshSubmissions().catch(() => {});
  }
  scheduleDraw();
}

// ---- requests ------------------------------------------------------------------------------

/** A request the server refused: its `{error, code}` in plain words. */
class Refused extends Error {}

async function call(method, path, body, words = refusalWords) {
  let res;
  try {
    res = await fetch(`${base()}${path}`, {
      method,
      headers: withToken(body === undefined ? {} : { "content-type": "application/json" }),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    connection.suspect();
    throw new Refused(`Could not reach the server at ${location.host}.`);
  }
  connection.reached();
  const text = await res.text();
  let json = {};
  try {
    json = text === "" ? {} : JSON.parse(text);
  } catch {
    // not the harness's answer (a proxy's page): said below
  }
  if (res.status === 401) {
    closeStream();
    signIn?.show();
    throw new Refused("Sign in to use this server: see above.");
  }
  if (!res.ok) throw new Refused(words(json.code, json.error ?? `HTTP ${res.status}`));
  return json;
}

async function act(what, rethrow = false) {
  showError("");
  try {
    await what();
  } catch (err) {
    showError(err instanceof Refused ? err.message : `Something went wrong in the page: ${err instanceof Error ? err.message : String(err)}`);
    if (rethrow) throw err;
  }
}

function showError(text) {
  $("error").textContent = text;
}

async function send() {
  const body = $("message").value.trim();
  if (body === "") return;
  if (pending.busy) throw new Refused("An image is still uploading: send once it is ready.");
  const attachments = pending.refs();
  const { submissionId } = await call("POST", "", { kind: "user", body, session: state.session, ...(attachments.length ? { attachments } : {}) });
  $("message").value = "";
  pending.clear();
  state.awaiting.add(submissionId);
  openStream();
  await refreshSubmissions();
}

/** An edited message: a new session with the history before it and the edit (POST …/fork), shown at once. */
async function forkEdit(item, body) {
  const fromRecordId = state.ids[state.ids.indexOf(item.recordId) - 1];
  if (fromRecordId === undefined) throw new Refused("This message is not in the log the page has read: reload and try again.");
  const message = { kind: "user", body, ...(item.attachments?.length ? { attachments: item.attachments } : {}) };
  const forked = await call("POST", `/fork?${new URLSearchParams({ session: state.session })}`, { fromRecordId, message });
  switchTo(forked.session);
  if (forked.submissionId) state.awaiting.add(forked.submissionId);
}

async function steer() {
  const body = $("message").value.trim();
  if (body === "") throw new Refused("Type the message to steer with first.");
  await call("POST", "/steer", { body, session: state.session });
  $("message").value = "";
}

/** The run to cancel: the newest unsettled submission of the session. */
async function cancel() {
  await refreshSubmissions();
  const target = state.submissions.find((s) => s.status !== "settled");
  if (!target) throw new Refused("Nothing is running in this session right now, so there is nothing to cancel.");
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
  const retrying = new Map(state.view.retrying.map((r) => [r.submissionId, r]));
  $("submissions").tBodies[0].replaceChildren(...page.submissions.map((s) => submissionRow(s, retrying.get(s.id) ?? s.retry)));
  // The settlement record is written before the row is finalized: a listing read on that record
  // can still say `terminalizing`, so it is read again until the row says `settled`.
  // Likewise a run that asked for approval parks `waiting` once its tool batch ends.
  const parking = (s) => s.status === "running" && state.view.items.some((i) => i.kind === "tool" && i.submissionId === s.id && i.approval?.state === "pending");
  if (page.submissions.some((s) => s.status === "terminalizing" || parking(s)) && state.listingRecheck === null) {
    state.listingRecheck = setTimeout(() => {
      state.listingRecheck = null;
      refreshSubmissions().catch(() => {}); // a background read: the next settlement reads it again
    }, FINISHING_RECHECK_MS);
  }
}

// ---- agents and sessions -------------------------------------------------------------------

/** Shows `session` from its first record: closes the old stream, replays the whole log. */
function switchTo(session) {
  closeStream();
  state.session = session;
  state.view = new MessageView();
  state.lastId = "";
  state.ids = [];
  state.awaiting.clear();
  state.submissions = [];
  remember(sessionsKey(), session);
  const query = new URLSearchParams({ agent: state.agent, instance: state.instance });
  history.replaceState(null, "", `${location.pathname}?${query}#session=${encodeURIComponent(session)}`);
  options($("session"), ["default", ...knownSessions(sessionsKey()).filter((s) => s !== "default")], session);
  $("submissions").tBodies[0].replaceChildren();
  draw();
  // The log is followed once the listing shows the session has a submission: the stream of a
  // conversation not started yet answers 404, which the browser logs as an error in the console
  // (a new session, a first visit). The listing answers 200 either way; sending opens the stream.
  // When the listing cannot be read (no server, a sign-in), the stream is opened as before: it
  // says which.
  void act(async () => {
    let listed = false;
    try {
      await refreshSubmissions();
      listed = true;
    } finally {
      if (session === state.session && (!listed || state.submissions.length > 0)) openStream();
    }
  });
}

// ---- layout --------------------------------------------------------------------------------

function showSubmissions(shown) {
  document.body.dataset.submissions = shown ? "shown" : "hidden";
  $("toggle-submissions").setAttribute("aria-expanded", String(shown));
}

// ---- wiring --------------------------------------------------------------------------------

async function start() {
  let config = { agents: [] };
  try {
    const res = await fetch("/chat-config.json", { cache: "no-store" });
    config = await res.json();
  } catch {
    connection.suspect();
  }
  const instanceClaim = typeof config.instanceClaim === "string" ? config.instanceClaim : "sub";
  const ownInstance = () => {
    const own = tokenClaim(instanceClaim);
    return /^[A-Za-z0-9._:~-]{1,256}$/.test(own) && own !== "." && own !== ".." ? own : "";
  };
  const onToken = () => {
    if (!instanceNamed && ownInstance()) return goTo(state.agent, ownInstance());
    switchTo(state.session);
  };
  // Back from the sign-in page to the agent and session, and the instance only if the address named it.
  const returnTo = () => {
    const query = new URLSearchParams({ agent: state.agent, ...(instanceNamed ? { instance: state.instance } : {}) });
    return `${location.pathname}?${query}${location.hash}`;
  };
  signIn = new SignIn($("sign-in"), typeof config.signIn?.url === "string" ? config.signIn.url : undefined, onToken, returnTo);
  signIn.hide();
  if (!instanceNamed && ownInstance()) state.instance = ownInstance();
  const agents = Array.isArray(config.agents) ? config.agents : [];
  const wanted = params.get("agent");
  state.agent = agents.includes(wanted) ? wanted : (agents[0] ?? "");
  if (config.title) document.title = $("title").textContent = config.title;
  options($("agent"), agents, state.agent);
  document.body.dataset.agents = agents.length > 1 ? "many" : "one";
  if (agents.length === 1 && !config.title) $("title").textContent = `${state.agent} · resolute-harness`;
  $("instance").value = state.instance;
  $("message").placeholder = config.placeholder || `Message ${state.agent}…`;
  if (!state.agent) return showError("The server has no agents to chat with.");
  showSubmissions(!matchMedia(NARROW).matches);
  switchTo(sessionFromHash());
}

/** Another agent or instance: a page of its own (its sessions, its URL). */
function goTo(agent, instance) {
  location.assign(`${location.pathname}?${new URLSearchParams({ agent, instance })}`);
}

$("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  void act(send);
});
$("message").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    void act(send);
  }
});
$("steer").addEventListener("click", () => void act(steer));
$("cancel").addEventListener("click", () => void act(cancel));
$("compact").addEventListener("click", () => void act(compact));
$("session").addEventListener("change", (e) => switchTo(e.target.value));
$("agent").addEventListener("change", (e) => goTo(e.target.value, state.instance));
$("instance-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const instance = $("instance").value.trim();
  if (!/^[A-Za-z0-9._:~-]{1,256}$/.test(instance) || instance === "." || instance === "..") {
    return showError("An instance name is 1 to 256 of A-Z a-z 0-9 . _ : ~ -");
  }
  if (instance !== state.instance) goTo(state.agent, instance);
});
$("new-session-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const name = $("new-session").value.trim();
  if (!SESSION_RULE.test(name)) return showError("A session name is 1 to 128 of A-Z a-z 0-9 . _ : ~ -");
  showError("");
  $("new-session").value = "";
  switchTo(name);
});
$("toggle-submissions").addEventListener("click", () => showSubmissions(document.body.dataset.submissions !== "shown"));
// A tab brought back to the front checks the server is still there (an idle tab does not poll).
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState !== "visible") return;
  connection.suspect();
  // A waiting session's stream ends once it parks: a card still pending here may have been
  // decided elsewhere (another tab, the CLI). Read on from the last record (204 if nothing new).
  if (state.view.items.some((i) => i.kind === "tool" && i.approval?.state === "pending")) openStream();
});
window.addEventListener("online", () => connection.suspect());
void start();
