/**
 * github-bot's repository names (issue 24): `.` and `..` name no repository (they would walk the
 * API URL up a level), and the reply tool encodes every part of the URL it builds.
 */
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { instanceOf, isRepoName, issueOf } from "../../../examples/github-bot/issue-ref.ts";
import { postIssueCommentTool } from "../../../examples/github-bot/post-issue-comment-tool.ts";

let api: Server;
let apiUrl: string;
const paths: string[] = [];
beforeAll(async () => {
  api = createServer((req, res) => {
    paths.push(req.url ?? "");
    req.resume();
    req.on("end", () => {
      res.writeHead(201, { "content-type": "application/json" });
      res.end(JSON.stringify({ id: 1, html_url: "https://github.com/x" }));
    });
  });
  await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
  apiUrl = `http://127.0.0.1:${(api.address() as { port: number }).port}/api/v3/`;
});
afterAll(() => new Promise<void>((resolve) => api.close(() => resolve())));

describe("github-bot repository names", () => {
  it("`.` and `..` are no repository: instance ids naming them name no issue, and none can be made for them", () => {
    expect(isRepoName(".")).toBe(false);
    expect(isRepoName("..")).toBe(false);
    expect(isRepoName(".github")).toBe(true);
    expect(isRepoName("web.site")).toBe(true);
    expect(issueOf("acme~..~42")).toBeUndefined();
    expect(issueOf("acme~.~42")).toBeUndefined();
    expect(issueOf("acme~web.site~42")).toEqual({ owner: "acme", repo: "web.site", issue: 42 });
    expect(() => instanceOf({ owner: "acme", repo: "..", issue: 1 })).toThrow(/not a GitHub repository/);
    expect(() => instanceOf({ owner: "ac/me", repo: "x", issue: 1 })).toThrow(/not a GitHub repository/);
  });

  it("the reply tool posts to the issue's comments under the API URL's path, each part encoded", async () => {
    const tool = postIssueCommentTool({ owner: "acme", repo: "web.site", issue: 42 }, { token: "t", apiUrl });
    const result = await tool.execute("call-1", { body: "hi" }, undefined, undefined);
    expect(result.details).toMatchObject({ dryRun: false });
    // A part that needs encoding cannot reach the tool through issueOf; encoded anyway.
    const odd = postIssueCommentTool({ owner: "acme", repo: "a b?c", issue: 7 }, { token: "t", apiUrl });
    await odd.execute("call-2", { body: "hi" }, undefined, undefined);
    expect(paths).toEqual(["/api/v3/repos/acme/web.site/issues/42/comments", "/api/v3/repos/acme/a%20b%3Fc/issues/7/comments"]);
  });
});
