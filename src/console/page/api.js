// The console's calls to the harness's HTTP API, from the page's own origin. With auth on, the
// operator's token (asked for on a 401) is kept in the tab's sessionStorage and sent as the bearer.

const TOKEN_KEY = "harness-console-token";

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.code;
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) ?? "";
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** A JSON request; throws ApiError with the API's `{error, code}`. */
export async function api(path, init = {}) {
  const headers = { ...(init.body === undefined ? {} : { "content-type": "application/json" }) };
  if (token()) headers.authorization = `Bearer ${token()}`;
  const res = await fetch(path, { ...init, headers: { ...headers, ...(init.headers ?? {}) } });
  const text = await res.text();
  let body;
  try {
    body = text === "" ? undefined : JSON.parse(text);
  } catch {
    body = { error: text };
  }
  if (!res.ok) throw new ApiError(res.status, body);
  return body;
}

export const enc = encodeURIComponent;

/** One page of the listing across agents and instances. */
export function activity(filters = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(filters)) if (v !== undefined && v !== "") q.set(k, String(v));
  return api(`/console/api/activity?${q}`);
}

/** Every page of a listing, up to `max` rows. */
export async function activityAll(filters, max = 500) {
  const rows = [];
  let before;
  for (let i = 0; i < 50 && rows.length < max; i++) {
    const page = await activity({ ...filters, limit: 100, before });
    rows.push(...page.submissions);
    if (!page.next) break;
    before = page.next;
  }
  return rows;
}

export function submission(agent, instance, id) {
  return api(`/agents/${enc(agent)}/${enc(instance)}/submissions/${enc(id)}`);
}

export function records(agent, instance, session) {
  return api(`/console/api/records?agent=${enc(agent)}&instance=${enc(instance)}&session=${enc(session)}`);
}

export function decide(row, callId, approved, reason) {
  return api(`/agents/${enc(row.agent)}/${enc(row.instance)}/submissions/${enc(row.id)}/approvals/${enc(callId)}`, {
    method: "POST",
    body: JSON.stringify({ approved, ...(reason ? { reason } : {}) }),
  });
}

export function cancel(row) {
  return api(`/agents/${enc(row.agent)}/${enc(row.instance)}/submissions/${enc(row.id)}/cancel`, {
    method: "POST",
    body: JSON.stringify({ reason: "cancelled from the console" }),
  });
}

export function retry(row) {
  return api(`/console/api/submissions/${enc(row.id)}/retry`, { method: "POST", body: "{}" });
}

/** Answers a call that waits for a callback, by hand (the operator's; no callback id needed). */
export function answerCallback(row, callId, answer) {
  return api(`/console/api/submissions/${enc(row.id)}/callbacks/${enc(callId)}`, { method: "POST", body: JSON.stringify(answer) });
}

/** Calls one of an agent's tools directly (harness dev only). */
export function callTool(agent, instance, toolName, args) {
  return api(`/console/api/agents/${enc(agent)}/${enc(instance)}/tools/${enc(toolName)}`, { method: "POST", body: JSON.stringify({ args }) });
}
