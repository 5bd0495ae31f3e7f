/**
 * The GitHub bot's agent: `issue-bot`, one instance per issue (`acme~website~42`), woken by
 * `github_issue_comment` signals. Keyless: a deterministic model thanks the commenter through the
 * `post_issue_comment` tool, then says what it did.
 */
import type { AgentDefinition } from "../../src/agent/agent-definition.ts";
import { keylessExampleModel, resultText, type KeylessTurn, type StreamBlock } from "../shared/keyless-model.ts";
import { issueLabel, issueOf } from "./issue-ref.ts";
import { POST_ISSUE_COMMENT, postIssueCommentTool } from "./post-issue-comment-tool.ts";

export const ISSUE_BOT = "issue-bot";

/** The signal type the webhook dispatches for a new issue comment. */
export const ISSUE_COMMENT_SIGNAL = "github_issue_comment";

export const agents: Record<string, AgentDefinition> = {
  [ISSUE_BOT]: {
    description: "Answers comments on one GitHub issue.",
    initialize: ({ instance, env }) => {
      const ref = issueOf(instance);
      if (ref === undefined) throw new Error(`instance ${JSON.stringify(instance)} names no issue (expected owner~repo~number)`);
      return {
        ...keylessExampleModel("local-issue-bot", answer, { delayMs: 5 }),
        systemPrompt:
          `You are the maintainers' assistant on ${issueLabel(ref)}. Each new comment arrives as a ` +
          `${ISSUE_COMMENT_SIGNAL} signal. Reply on the issue with ${POST_ISSUE_COMMENT}, briefly and kindly.`,
        tools: [postIssueCommentTool(ref, { token: env("GITHUB_TOKEN"), apiUrl: env("GITHUB_API_URL") || "https://api.github.com" })],
      };
    },
  },
};

/** Comment → one reply through the tool → a line saying what happened. */
function answer(turn: KeylessTurn): StreamBlock[] {
  const comment = issueComment(turn.userText);
  if (comment === undefined) return [{ type: "text", text: "I only act on issue comments." }];
  const result = turn.results.find((r) => r.toolName === POST_ISSUE_COMMENT);
  if (result === undefined) {
    const excerpt = comment.body.length > 120 ? `${comment.body.slice(0, 117)}...` : comment.body;
    return [
      {
        type: "toolCall",
        id: `call_reply_${turn.userIndex}`,
        name: POST_ISSUE_COMMENT,
        arguments: { body: `Thanks @${comment.handle}! A maintainer will look at this. You wrote:\n\n> ${excerpt}` },
      },
    ];
  }
  return [{ type: "text", text: result.isError ? `The reply failed: ${resultText(result)}` : resultText(result) }];
}

/** The comment in a rendered `github_issue_comment` signal. */
function issueComment(text: string): { body: string; handle: string } | undefined {
  try {
    const signal = JSON.parse(text) as { type?: string; body?: string; sender?: { handle?: string } };
    if (signal.type !== ISSUE_COMMENT_SIGNAL || typeof signal.body !== "string") return undefined;
    return { body: signal.body, handle: signal.sender?.handle ?? "there" };
  } catch {
    return undefined;
  }
}
