/** One GitHub issue (or pull request): the conversation a bot instance belongs to. */
export interface IssueRef {
  owner: string;
  repo: string;
  issue: number;
}

// GitHub owner and repository names never contain "~", and instance ids admit it: the instance
// id names the issue reversibly, so the reply tool can be bound to it from the id alone.
const INSTANCE = /^([A-Za-z0-9-]+)~([A-Za-z0-9._-]+)~([1-9][0-9]*)$/;
const OWNER = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/;
const REPO = /^[A-Za-z0-9._-]{1,100}$/;

/** A user or organization login as GitHub allows it (letters, digits, `-`; up to 39). */
export function isOwnerName(name: string): boolean {
  return OWNER.test(name);
}

/** A repository name as GitHub allows it (letters, digits, `.`, `_`, `-`; up to 100), never `.` or `..`. */
export function isRepoName(name: string): boolean {
  return REPO.test(name) && name !== "." && name !== "..";
}

/** `acme~website~42` for issue 42 of acme/website. */
export function instanceOf(ref: IssueRef): string {
  if (!isOwnerName(ref.owner) || !isRepoName(ref.repo)) throw new Error(`not a GitHub repository: ${JSON.stringify(`${ref.owner}/${ref.repo}`)}`);
  return `${ref.owner}~${ref.repo}~${ref.issue}`;
}

/** The issue an instance id names, or undefined when it names none (`.` and `..` name no repository). */
export function issueOf(instance: string): IssueRef | undefined {
  const m = INSTANCE.exec(instance);
  if (m === null || !isOwnerName(m[1]!) || !isRepoName(m[2]!)) return undefined;
  return { owner: m[1]!, repo: m[2]!, issue: Number(m[3]) };
}

/** `acme/website#42`. */
export function issueLabel(ref: IssueRef): string {
  return `${ref.owner}/${ref.repo}#${ref.issue}`;
}
