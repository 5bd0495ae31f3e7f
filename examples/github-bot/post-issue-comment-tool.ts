import type { AgentTool } from "../../src/agent/agent-setup.ts";
import { defineTool } from "../../src/agent/define-tool.ts";
import * as schema from "../../src/agent/tool-schema.ts";
import { log } from "../shared/settings.ts";
import { issueLabel, type IssueRef } from "./issue-ref.ts";

/** Name of the reply tool. */
export const POST_ISSUE_COMMENT = "post_issue_comment";

/** GitHub's limit on a comment body, in characters. */
const MAX_COMMENT_CHARS = 65_536;

const parameters = schema.obj({
  body: schema.str({ minLength: 1, maxLength: MAX_COMMENT_CHARS, description: "The comment, in GitHub Markdown." }),
});

/** What the tool's outcome records: the dry run's intended comment, or the posted one. */
export type PostIssueCommentDetails =
  | { dryRun: true; issue: string; body: string }
  | { dryRun: false; issue: string; id?: number; url?: string };

/** How the reply tool reaches GitHub; without a token it only records what it would post. */
export interface GitHubAccess {
  /** A token allowed to comment on the repository ("" = dry run). */
  token: string;
  /** Default https://api.github.com (GitHub Enterprise: https://HOST/api/v3). */
  apiUrl: string;
}

/**
 * A narrow, app-owned tool: it can only comment on the one issue its instance belongs to (the
 * model chooses the words, never the target). Without a token it is a dry run: the outcome
 * (and the log) say what would have been posted, and nothing leaves the machine.
 */
export function postIssueCommentTool(ref: IssueRef, access: GitHubAccess): AgentTool<typeof parameters, PostIssueCommentDetails> {
  const target = issueLabel(ref);
  return defineTool<typeof parameters, PostIssueCommentDetails>({
    name: POST_ISSUE_COMMENT,
    label: "Comment on the issue",
    description: `Posts a comment on ${target} (the issue this conversation is about).`,
    parameters,
    async execute(_callId, { body }, signal) {
      if (access.token === "") {
        log(`dry run (no GITHUB_TOKEN): would post on ${target}: ${JSON.stringify(body)}`);
        return {
          content: [{ type: "text", text: `Dry run (no GITHUB_TOKEN): would post on ${target}.` }],
          details: { dryRun: true, issue: target, body },
        };
      }
      const path = ["repos", ref.owner, ref.repo, "issues", String(ref.issue), "comments"].map(encodeURIComponent).join("/");
      const url = `${access.apiUrl.replace(/\/$/, "")}/${path}`;
      const res = await fetch(url, {
        method: "POST",
        headers: {
          accept: "application/vnd.github+json",
          authorization: `Bearer ${access.token}`,
          "content-type": "application/json",
          "user-agent": "resolute-harness-github-bot",
          "x-github-api-version": "2022-11-28",
        },
        body: JSON.stringify({ body }),
        signal,
      });
      if (!res.ok) throw new Error(`GitHub answered ${res.status} to the comment on ${target}`);
      const posted = (await res.json()) as { id?: number; html_url?: string };
      log(`posted on ${target}: ${posted.html_url ?? "(no url)"}`);
      return {
        content: [{ type: "text", text: `Posted on ${target}: ${posted.html_url ?? ""}` }],
        details: { dryRun: false, issue: target, id: posted.id, url: posted.html_url },
      };
    },
  });
}
