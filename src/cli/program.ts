import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { extname } from "node:path";
import { Command, CommanderError } from "commander";
import { createClient, type HarnessClient } from "../client/client.ts";
import { HarnessHttpError } from "../client/http-error.ts";
import { AttachmentDigestMismatch } from "../client/conversation-transfer.ts";
import { functionUrlRegion } from "../client/sigv4.ts";
import type { ConversationRecord, SettledPayload } from "../protocol/records.ts";
import type { DispatchMessage } from "../protocol/dispatch.ts";
import type { SubmissionStatus } from "../protocol/submission-view.ts";
import { addApprovalCommands } from "./approval-commands.ts";
import { addConversationCommands } from "./conversation-commands.ts";
import { EXIT, usageError, type CliIo } from "./cli-io.ts";
import { registerDevCommand } from "./dev-command.ts";
import { registerInitCommand } from "./init-command.ts";
import { RecordRenderer } from "./record-renderer.ts";
import { formatPendingApprovals, formatSubmissionDetail, formatSubmissionPage } from "./submission-table.ts";
import { terminalJson, terminalText } from "./terminal-text.ts";

export { EXIT, type CliIo } from "./cli-io.ts";

export const DEFAULT_URL = "http://127.0.0.1:8484";

/** The package's version (`harness --version`): package.json sits two folders up in src/ and dist/ alike. */
export const VERSION = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;

interface GlobalOptions {
  url: string;
  token?: string;
  json?: boolean;
  sigv4?: boolean;
  region?: string;
}

/** `agent/instance`, the address of an agent instance (an instance id may hold `:`, never `/`). */
export function parseTarget(target: string): { agent: string; instance: string } {
  const slash = target.indexOf("/");
  const agent = target.slice(0, slash);
  const instance = target.slice(slash + 1);
  if (slash <= 0 || instance === "" || instance.includes("/")) {
    throw new CommanderError(EXIT.usage, "harness.target", `error: expected <agent>/<instance>, got ${JSON.stringify(target)}`);
  }
  return { agent, instance };
}

/**
 * Runs the `harness` command line and resolves with its exit status. Every command talks to a
 * running harness over HTTP through `resolute-harness/client`.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let status: number = EXIT.ok;
  const program = new Command("harness")
    .description("Start a project (init), run your agents locally (dev), and talk to a resolute-harness server: send messages, tail conversations live, steer, cancel, compact, list submissions, approve or deny tool calls.")
    .option("--url <url>", "the harness's base URL (env: HARNESS_URL)", io.env.HARNESS_URL || DEFAULT_URL)
    .option("--token <token>", "bearer token for the server's auth check (env: HARNESS_TOKEN)")
    .option("--sigv4", "sign requests with AWS SigV4 (an AWS_IAM function URL); credentials from the AWS default chain")
    .option("--region <region>", "the region to sign for (default: the function URL's, else AWS_REGION)")
    .option("--json", "machine-readable output (JSON; NDJSON records for tail)")
    .version(VERSION, "-V, --version", "print the version of resolute-harness")
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    });

  // The token's fallback is read here, not as an option default, so help never prints it.
  const globals = (): GlobalOptions => {
    const opts = program.opts<GlobalOptions>();
    // With --sigv4 the signature is the credential: an exported HARNESS_TOKEN is not sent beside it.
    return { ...opts, token: opts.token ?? (opts.sigv4 ? undefined : io.env.HARNESS_TOKEN || undefined) };
  };
  const client = () => clientFor(checkedGlobals(globals(), io.env));
  // Everything printed passes terminalText/terminalJson: the server's strings come from models and
  // users, and a control character in them must not act on the operator's terminal (issue 33).
  const print = (human: string, json: unknown) => io.stdout.write(globals().json ? `${terminalJson(json)}\n` : `${terminalText(human, { layout: true })}\n`);

  registerInitCommand(program, io, (code) => (status = code));
  registerDevCommand(program, io, (code) => (status = code));

  program
    .command("send")
    .description("send a message to an agent instance (202: prints the submission id; --wait: streams the reply)")
    .argument("<target>", "agent/instance")
    .argument("<text>", "the message")
    .option("-s, --session <session>", "the session of the instance", "default")
    .option("-w, --wait", "stream the reply and exit with the settlement's status")
    .option("--schema <file>", "a JSON Schema file: ask for a structured result")
    .option("--signal <type>", "send as a signal of this type instead of a user message")
    .option("--dispatch-id <id>", "idempotency key: the same id and message answer the same submission")
    .option("-a, --attach <file>", "attach a file (repeatable; its type from the extension: .png .jpg .gif .webp .txt .md .csv .json .pdf)", collect, [])
    .action(async (target: string, text: string, opts: { session: string; wait?: boolean; schema?: string; signal?: string; dispatchId?: string; attach: string[] }) => {
      const { agent, instance } = parseTarget(target);
      const message: DispatchMessage = opts.signal ? { kind: "signal", body: text, signal: { type: opts.signal } } : { kind: "user", body: text };
      if (opts.schema) message.resultSchema = await readSchema(opts.schema);
      if (opts.attach.length > 0 && opts.signal) throw new CommanderError(EXIT.usage, "harness.attach", "error: --attach goes with a user message, not --signal");
      const files = await Promise.all(opts.attach.map(readAttachment));
      const c = client();
      if (files.length > 0) message.attachments = [];
      for (const file of files) message.attachments!.push(await c.uploadAttachment(file.data, file.mediaType, { signal: io.signal }));
      const ids = await c.dispatch(agent, instance, message, { session: opts.session, dispatchId: opts.dispatchId, signal: io.signal });
      if (!opts.wait) {
        print(`admitted ${ids.submissionId} (conversation ${ids.conversationId})`, ids);
        return;
      }
      const renderer = globals().json ? undefined : new RecordRenderer(io.stdout);
      try {
        const settled = await c.waitForSettled(agent, instance, ids.submissionId, {
          session: opts.session,
          signal: io.signal,
          onRecord: (record) => {
            if (record.submissionId === ids.submissionId) renderer?.render(record);
          },
        });
        renderer?.finish();
        if (globals().json) io.stdout.write(`${terminalJson(settled)}\n`);
        else if (settled.result !== undefined) io.stdout.write(`${terminalJson(settled.result, 2)}\n`);
        status = settled.status === "succeeded" ? EXIT.ok : EXIT.settledFailed;
      } finally {
        renderer?.finish();
      }
    });

  program
    .command("tail")
    .description("print a session's conversation, then follow it live until it is idle (--follow: keep following)")
    .argument("<target>", "agent/instance")
    .option("-s, --session <session>", "the session of the instance", "default")
    .option("--from <recordId>", "start after this record id (default: the whole conversation)")
    .option("-f, --follow", "keep following after the session goes idle")
    .action(async (target: string, opts: { session: string; from?: string; follow?: boolean }) => {
      const { agent, instance } = parseTarget(target);
      const c = client();
      const renderer = globals().json ? undefined : new RecordRenderer(io.stdout);
      const show = (record: ConversationRecord) => (renderer ? renderer.render(record) : io.stdout.write(`${terminalJson(record)}\n`));
      let after = opts.from ?? "";
      let waitingSaid = false;
      try {
        for (;;) {
          try {
            for await (const record of c.stream(agent, instance, { session: opts.session, after, signal: io.signal })) {
              after = record.id;
              show(record);
            }
          } catch (err) {
            // Following a conversation that does not exist yet: wait for its first message.
            if (!(opts.follow && err instanceof HarnessHttpError && err.code === "conversation_not_found")) throw err;
            if (!waitingSaid) io.stderr.write(`waiting for ${terminalText(target)} (session ${terminalText(opts.session)}) to start: nothing sent to it yet\n`);
            waitingSaid = true;
          }
          if (!opts.follow) return;
          await sleep(1_000, io.signal);
        }
      } finally {
        renderer?.finish();
      }
    });

  for (const [name, description] of [
    ["steer", "inject a message into the run in flight, delivered at its next turn boundary"],
    ["followup", "queue a message for when the run in flight would otherwise stop"],
  ] as const) {
    program
      .command(name)
      .description(description)
      .argument("<target>", "agent/instance")
      .argument("<text>", "the message")
      .option("-s, --session <session>", "the session of the instance", "default")
      .action(async (target: string, text: string, opts: { session: string }) => {
        const { agent, instance } = parseTarget(target);
        const c = client();
        const options = { session: opts.session, signal: io.signal };
        await (name === "steer" ? c.steer(agent, instance, text, options) : c.followUp(agent, instance, text, options));
        print(`delivered to the run in flight (${name})`, { delivered: name });
      });
  }

  program
    .command("cancel")
    .description("cancel a submission: a queued or waiting one settles at once, a running one stops at its next safe point")
    .argument("<target>", "agent/instance")
    .argument("<submissionId>", "the submission to cancel")
    .option("--reason <text>", "why; the settlement's error is \"cancelled: <reason>\"")
    .option("-w, --wait", "follow a stopping run until it has settled, and exit 1 if it settled otherwise than cancelled")
    .action(async (target: string, submissionId: string, opts: { reason?: string; wait?: boolean }) => {
      const { agent, instance } = parseTarget(target);
      const c = client();
      const answer = await c.cancel(agent, instance, submissionId, { reason: opts.reason, signal: io.signal });
      let outcome = answer.outcome;
      if (answer.status === "cancelling" && opts.wait) {
        // The submission names its session: the caller need not.
        const { session } = await c.getSubmission(agent, instance, submissionId, { signal: io.signal });
        const settled = await c.waitForSettled(agent, instance, submissionId, { session, signal: io.signal });
        const { submissionId: _id, conversationId: _conversation, ...payload } = settled;
        outcome = payload;
      }
      if (outcome === undefined) {
        print(`cancelling ${submissionId} (it stops at its next safe point)`, answer);
        return;
      }
      print(`${submissionId} ${settlementLine(outcome)}`, { submissionId, status: "settled", outcome });
      // A run that finished before the cancel reached it settled otherwise: not what was asked.
      if (!isCancelled(outcome)) status = EXIT.settledFailed;
    });

  program
    .command("compact")
    .description("compact the session's history into a summary (a submission of its own, in the session's order)")
    .argument("<target>", "agent/instance")
    .option("-s, --session <session>", "the session of the instance", "default")
    .option("-w, --wait", "wait for the compaction to settle and exit with its status")
    .action(async (target: string, opts: { session: string; wait?: boolean }) => {
      const { agent, instance } = parseTarget(target);
      const c = client();
      if (!opts.wait) {
        const ids = await c.compact(agent, instance, { session: opts.session, signal: io.signal });
        print(`admitted compaction ${ids.submissionId} (conversation ${ids.conversationId})`, ids);
        return;
      }
      const settled = await c.compactAndWait(agent, instance, { session: opts.session, signal: io.signal });
      const result = settled.result as { compacted?: boolean } | undefined;
      const human = settled.status === "succeeded" ? (result?.compacted ? "compacted" : "nothing to compact") : settlementLine(settled);
      print(`${settled.submissionId} ${human}`, settled);
      status = settled.status === "succeeded" ? EXIT.ok : EXIT.settledFailed;
    });

  program
    .command("ls")
    .description("list a session's submissions, newest first (status, attempts, outcome, tokens); with an id: that one and its attempts")
    .argument("<target>", "agent/instance")
    .argument("[submissionId]", "show this submission in full")
    .option("-s, --session <session>", "the session of the instance", "default")
    .option("--status <status>", "only submissions in this status (queued, running, waiting, terminalizing, settled)")
    .option("-n, --limit <n>", "page size (1-100)", "20")
    .option("--after <submissionId>", "the page after this submission (the previous page's last id)")
    .action(async (target: string, submissionId: string | undefined, opts: { session: string; status?: string; limit: string; after?: string }) => {
      const { agent, instance } = parseTarget(target);
      const c = client();
      if (submissionId !== undefined) {
        const detail = await c.getSubmission(agent, instance, submissionId, { signal: io.signal });
        print(formatSubmissionDetail(detail), detail);
        return;
      }
      if (!/^[0-9]+$/.test(opts.limit)) {
        throw new CommanderError(EXIT.usage, "harness.limit", `error: --limit expects a number, got ${JSON.stringify(opts.limit)}`);
      }
      const page = await c.listSubmissions(agent, instance, {
        session: opts.session,
        status: opts.status as SubmissionStatus | undefined,
        limit: Number(opts.limit),
        after: opts.after,
        signal: io.signal,
      });
      // Only a waiting head can wait for a person: ask for its approvals when the page shows one.
      const waits = page.submissions.some((s) => s.waitingFor?.some((e) => e.kind === "approval"));
      const approvals = waits ? await c.pendingApprovals(agent, instance, { session: opts.session, signal: io.signal }) : [];
      const pending = formatPendingApprovals(target, approvals);
      print(pending === "" ? formatSubmissionPage(page) : `${formatSubmissionPage(page)}\n${pending}`, approvals.length > 0 ? { ...page, approvals } : page);
    });

  addApprovalCommands(program, { client, print, parseTarget, signal: io.signal });
  addConversationCommands(program, { client, print, parseTarget, stdout: io.stdout, signal: io.signal });

  try {
    await program.parseAsync([...argv], { from: "user" });
    return status;
  } catch (err) {
    return reportError(err, io, globals());
  }
}

/** One line for a settlement: `succeeded`, or `failed [code] error`. */
function settlementLine(outcome: SettledPayload): string {
  return outcome.status === "succeeded" ? "succeeded" : `failed [${terminalText(outcome.errorCode ?? "unknown")}] ${terminalText(outcome.error ?? "")}`.trimEnd();
}

function isCancelled(outcome: SettledPayload): boolean {
  return outcome.errorCode === "cancelled" || outcome.errorCode === "cancelled_by_parent";
}

/**
 * The global options a client command needs, checked before anything is sent: a URL that is one
 * (from --url or HARNESS_URL: the message names which), and for --sigv4 a region to sign for.
 */
function checkedGlobals(options: GlobalOptions, env: CliIo["env"]): GlobalOptions {
  const flag = options.url === env.HARNESS_URL && env.HARNESS_URL ? "HARNESS_URL" : "--url";
  let url: URL;
  try {
    url = new URL(options.url);
  } catch {
    throw usageError("url", `${flag} expects the harness's base URL, such as ${DEFAULT_URL}; got ${JSON.stringify(options.url)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw usageError("url", `${flag} expects an http:// or https:// URL, such as ${DEFAULT_URL}; got ${JSON.stringify(options.url)}`);
  }
  if (options.sigv4 && options.token) {
    throw usageError("token", "--token and --sigv4 both set the Authorization header: pass one");
  }
  if (options.sigv4 && !options.region && !functionUrlRegion(options.url) && !env.AWS_REGION && !env.AWS_DEFAULT_REGION) {
    throw usageError("region", `--sigv4 needs a region to sign for: ${url.host} is not a Lambda function URL that names one; pass --region <region> (or set AWS_REGION)`);
  }
  return options;
}

function clientFor(options: GlobalOptions): HarnessClient {
  return createClient({
    baseUrl: options.url,
    ...(options.token ? { token: options.token } : {}),
    ...(options.sigv4 ? { sigv4: options.region ? { region: options.region } : true } : {}),
  });
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Media types of the extensions `--attach` knows (the server's policy decides what it takes). */
const MEDIA_TYPES: Record<string, string> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".txt": "text/plain",
  ".md": "text/markdown",
  ".csv": "text/csv",
  ".json": "application/json",
  ".pdf": "application/pdf",
};

async function readAttachment(file: string): Promise<{ data: Uint8Array; mediaType: string }> {
  const mediaType = MEDIA_TYPES[extname(file).toLowerCase()];
  if (mediaType === undefined) {
    throw new CommanderError(EXIT.usage, "harness.attach", `error: cannot tell the type of ${file}: use one of ${Object.keys(MEDIA_TYPES).join(" ")}`);
  }
  try {
    return { data: new Uint8Array(await readFile(file)), mediaType };
  } catch (err) {
    throw new CommanderError(EXIT.usage, "harness.attach", `error: cannot read ${file}: ${(err as Error).message}`);
  }
}

async function readSchema(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new CommanderError(EXIT.usage, "harness.schema", `error: cannot read schema file ${file}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new CommanderError(EXIT.usage, "harness.schema", `error: schema file ${file} is not JSON: ${(err as Error).message}`);
  }
}

/**
 * Prints what went wrong and picks the exit status. Each message is one line with its control
 * characters escaped: a server's error message is the server's text (issue 33).
 */
function reportError(err: unknown, io: CliIo, options: GlobalOptions): number {
  const stderr = { write: (line: string) => io.stderr.write(`${terminalText(line.replace(/\n$/, ""))}\n`) };
  return reportErrorTo(err, stderr, io.signal, options);
}

function reportErrorTo(err: unknown, stderr: { write(text: string): void }, signal: AbortSignal | undefined, options: GlobalOptions): number {
  if (err instanceof CommanderError) {
    // Help and version print themselves and exit 0; Commander already wrote its own usage errors.
    if (err.exitCode === 0) return EXIT.ok;
    if (err.code.startsWith("harness.")) stderr.write(`${err.message}\n`);
    return EXIT.usage;
  }
  if (signal?.aborted) return EXIT.interrupted;
  if (err instanceof HarnessHttpError && err.code === "unreachable") {
    stderr.write(`error: ${err.message} (is it running? --url or HARNESS_URL points elsewhere)\n`);
    return EXIT.transport;
  }
  if (err instanceof HarnessHttpError && err.status === 401) {
    // One line that says what to do: the server wants a token this command did not send, or not this one.
    const hint = options.token
      ? "the server did not accept the token from --token or HARNESS_TOKEN: set HARNESS_TOKEN to a valid one (a fresh access token, or the server's HARNESS_BEARER_TOKEN)"
      : "the server wants a bearer token: set HARNESS_TOKEN (or pass --token) to an access token, or the server's HARNESS_BEARER_TOKEN";
    stderr.write(`error: ${err.message} (unauthorized, HTTP 401): ${hint}\n`);
    return EXIT.refused;
  }
  if (err instanceof HarnessHttpError) {
    const transport = err.code === "unexpected_response";
    stderr.write(`error: ${err.message} (${transport ? "" : `${err.code}, `}HTTP ${err.status})\n`);
    return transport ? EXIT.transport : EXIT.refused;
  }
  if (err instanceof AttachmentDigestMismatch) {
    // Not the bytes the server's own line declares: the answer cannot be trusted.
    stderr.write(`error: ${err.message} (${err.code})\n`);
    return EXIT.transport;
  }
  const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : "";
  stderr.write(`error: cannot reach the harness at ${options.url}: ${err instanceof Error ? err.message : String(err)}${cause}\n`);
  return EXIT.transport;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}
