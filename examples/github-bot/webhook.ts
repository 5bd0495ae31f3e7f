import { createHmac, timingSafeEqual } from "node:crypto";
import type { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { Runtime } from "../../src/runtime/runtime.ts";
import { RequestError } from "../../src/http/http-errors.ts";
import { ISSUE_BOT, ISSUE_COMMENT_SIGNAL } from "./agents.ts";
import { instanceOf, isOwnerName, isRepoName } from "./issue-ref.ts";

/** Largest webhook body accepted (GitHub's own cap is 25 MB; an issue comment is far smaller). */
export const MAX_WEBHOOK_BYTES = 1024 * 1024;

/** Default oldest signed delivery accepted, by its comment's `created_at`: one hour. */
export const DEFAULT_MAX_DELIVERY_AGE_S = 3600;

export interface WebhookOptions {
  /** GITHUB_WEBHOOK_SECRET; "" accepts unsigned deliveries (local trials only). */
  secret: string;
  /** Default "/webhooks/github". */
  path?: string;
  /** Signed deliveries whose comment is older than this are refused. Default {@link DEFAULT_MAX_DELIVERY_AGE_S}. */
  maxDeliveryAgeS?: number;
  /** Default `Date.now`. */
  now?: () => number;
}

/** The dispatch id of a comment: the signed payload's own comment id, not the unsigned delivery header. */
export function commentDispatchId(commentId: number): string {
  return `github-comment-${commentId}`;
}

/**
 * `POST /webhooks/github`: a GitHub webhook as a channel into the harness.
 *
 * - The `X-Hub-Signature-256` HMAC is checked over the exact raw bytes before anything is parsed
 *   (401 on a mismatch or a missing signature when a secret is set).
 * - Over 1 MiB → 413. Events other than a created `issue_comment` (and comments by bots, so the
 *   bot never answers itself) → 204, nothing stored.
 * - A new comment becomes a `github_issue_comment` signal for the issue's instance. Its dispatch
 *   id comes from the signed body (`github-comment-<comment.id>`), not from `X-GitHub-Delivery`,
 *   which the signature does not cover: a redelivery, or the same signed body replayed under
 *   another delivery id, is the same submission (202, same ids, `replayed`); a changed payload
 *   for the same comment is refused (409 `dispatch_conflict`). With a secret, a comment created
 *   more than `maxDeliveryAgeS` ago is refused (400): a captured delivery cannot be replayed
 *   after its submission is gone either.
 * - Repository and owner names are checked as GitHub spells them (`.` and `..` are no names).
 * - The answer comes once admission is durable, well inside GitHub's 10 s delivery timeout; the
 *   run goes on after it.
 */
export function githubWebhook(runtime: Runtime, options: WebhookOptions): (app: Hono) => void {
  const secret = options.secret;
  const maxAgeMs = (options.maxDeliveryAgeS ?? DEFAULT_MAX_DELIVERY_AGE_S) * 1000;
  const now = options.now ?? Date.now;
  return (app) =>
    app.post(
      options.path ?? "/webhooks/github",
      bodyLimit({
        maxSize: MAX_WEBHOOK_BYTES,
        onError: (c) => c.json({ error: `webhook body exceeds ${MAX_WEBHOOK_BYTES} bytes`, code: "payload_too_large" }, 413),
      }),
      async (c) => {
        const raw = Buffer.from(await c.req.arrayBuffer());
        if (secret !== "" && !signatureMatches(secret, raw, c.req.header("x-hub-signature-256"))) {
          throw new RequestError(401, "unauthorized", "X-Hub-Signature-256 does not match the body");
        }
        const event = c.req.header("x-github-event");
        if (!event) throw new RequestError(400, "invalid_request", "X-GitHub-Event header is required");
        if (event !== "issue_comment") return c.body(null, 204);
        const payload = parsePayload(raw, c.req.header("content-type"));
        if (payload.action !== "created" || payload.comment.user.type === "Bot") return c.body(null, 204);
        const delivery = c.req.header("x-github-delivery");
        if (!delivery) throw new RequestError(400, "invalid_request", "X-GitHub-Delivery header is required");
        if (secret !== "") {
          // The signature proves GitHub sent these bytes, not when: bound how long they count.
          const created = Date.parse(payload.comment.created_at ?? "");
          if (!Number.isFinite(created)) throw new RequestError(400, "invalid_request", "comment.created_at is required on a signed delivery");
          if (now() - created > maxAgeMs) {
            throw new RequestError(400, "invalid_request", `delivery refused: the comment was created at ${payload.comment.created_at}, more than ${maxAgeMs / 1000} s ago`);
          }
        }
        const admitted = await runtime.dispatch({
          agent: ISSUE_BOT,
          instance: instanceOf({ owner: payload.repository.owner.login, repo: payload.repository.name, issue: payload.issue.number }),
          dispatchId: commentDispatchId(payload.comment.id),
          message: {
            kind: "signal",
            body: payload.comment.body,
            signal: {
              type: ISSUE_COMMENT_SIGNAL,
              sender: { handle: payload.comment.user.login, platform: "github" },
              tag: `issue-${payload.issue.number}`,
            },
          },
        });
        return c.json(admitted, 202);
      },
    );
}

/** Constant-time comparison of `sha256=<hex>` against the HMAC of the raw body. */
export function signatureMatches(secret: string, raw: Uint8Array, header: string | undefined): boolean {
  if (header === undefined || !header.startsWith("sha256=")) return false;
  const given = Buffer.from(header.slice("sha256=".length), "hex");
  const expected = createHmac("sha256", secret).update(raw).digest();
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The fields of an `issue_comment` delivery the bot uses. */
interface IssueCommentPayload {
  action: string;
  issue: { number: number };
  comment: { id: number; body: string; created_at?: string; user: { login: string; type?: string } };
  repository: { name: string; owner: { login: string } };
}

function parsePayload(raw: Buffer, contentType: string | undefined): IssueCommentPayload {
  if (contentType !== undefined && !/^application\/json\b/i.test(contentType)) {
    throw new RequestError(400, "invalid_request", "expected a JSON delivery (set the webhook's content type to application/json)");
  }
  let json: unknown;
  try {
    json = JSON.parse(raw.toString("utf8"));
  } catch {
    throw new RequestError(400, "invalid_request", "the delivery body is not valid JSON");
  }
  const p = json as Partial<IssueCommentPayload> | null;
  const ok =
    p !== null &&
    typeof p === "object" &&
    typeof p.action === "string" &&
    Number.isInteger(p.issue?.number) &&
    p.issue!.number > 0 &&
    Number.isSafeInteger(p.comment?.id) &&
    p.comment!.id > 0 &&
    typeof p.comment!.body === "string" &&
    typeof p.comment!.user?.login === "string" &&
    typeof p.repository?.name === "string" &&
    typeof p.repository.owner?.login === "string";
  if (!ok) throw new RequestError(400, "invalid_request", "not an issue_comment delivery (action, issue.number, comment.id/body/user.login, repository.name/owner.login)");
  const payload = p as IssueCommentPayload;
  if (!isOwnerName(payload.repository.owner.login) || !isRepoName(payload.repository.name)) {
    throw new RequestError(400, "invalid_request", `not a GitHub repository name: ${JSON.stringify(`${payload.repository.owner.login}/${payload.repository.name}`)}`);
  }
  return payload;
}
