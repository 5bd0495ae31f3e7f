/**
 * What the local-cloud tests (`test/e2e/lambda/*.aws.test.ts`) share to talk to the function URL
 * and wait on the store: a request with its JSON answer, a poll until a probe answers, a
 * submission reaching a status.
 */
import { randomUUID } from "node:crypto";
import type { Store } from "../../src/store/store.ts";
import type { Submission } from "../../src/store/submission.ts";

/** A short unique tag for instance names and messages. */
export const uid = (): string => randomUUID().slice(0, 8);
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** An HTTP answer: its status and its body parsed as JSON (undefined when empty). */
export interface JsonAnswer {
  status: number;
  json: any;
}

/**
 * Sends `body` as JSON (no body when undefined) and reads the answer. The content type defaults to
 * what `curl -d` sends (`application/x-www-form-urlencoded`): the app reads the body as JSON anyway.
 */
export async function requestJson(url: string, method: "GET" | "POST" = "POST", body?: unknown, contentType = "application/x-www-form-urlencoded"): Promise<JsonAnswer> {
  const res = await fetch(url, {
    method,
    headers: { "content-type": contentType },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

/** Polls `probe` every 100 ms until it answers something; throws naming `what` after `timeoutMs`. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** The submission once its status is `status`. */
export const inStatus = (store: Store, submissionId: string, status: Submission["status"], timeoutMs = 30_000): Promise<Submission> =>
  waitFor(
    `${submissionId} ${status}`,
    async () => {
      const sub = await store.getSubmission(submissionId);
      return sub.status === status ? sub : undefined;
    },
    timeoutMs,
  );
