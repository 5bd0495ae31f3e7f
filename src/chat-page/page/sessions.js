// The sessions a tab knows of (kept in localStorage per agent and instance) and the one its URL names.

/** A session name: 1 to 128 of A-Z a-z 0-9 . _ : ~ - */
export const SESSION_RULE = /^[A-Za-z0-9._:~-]{1,128}$/;

/** The sessions remembered under `key`. */
export function knownSessions(key) {
  try {
    const list = JSON.parse(localStorage.getItem(key) ?? "[]");
    return Array.isArray(list) ? list.filter((s) => typeof s === "string" && SESSION_RULE.test(s)) : [];
  } catch {
    return [];
  }
}

/** Remembers `session` under `key`. */
export function remember(key, session) {
  const list = knownSessions(key);
  if (!list.includes(session)) localStorage.setItem(key, JSON.stringify([...list, session]));
}

export function sessionFromHash() {
  const session = new URLSearchParams(location.hash.slice(1)).get("session");
  return session && SESSION_RULE.test(session) ? session : "default";
}
