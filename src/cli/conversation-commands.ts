import { createWriteStream } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import { once } from "node:events";
import type { Command } from "commander";
import type { HarnessClient } from "../client/client.ts";
import { HarnessHttpError } from "../client/http-error.ts";
import { parseExport } from "../conversation/export-parser.ts";
import { isHarnessError } from "../errors.ts";
import { usageError } from "./cli-io.ts";
import { terminalJson, terminalText as one } from "./terminal-text.ts";

/** What the conversation commands borrow from the program. */
export interface ConversationCommandContext {
  client(): HarnessClient;
  print(human: string, json: unknown): void;
  parseTarget(target: string): { agent: string; instance: string };
  stdout: { write(text: string): void };
  signal?: AbortSignal;
}

/**
 * `harness export <target> [-s session] [-o file]` and `harness import <file> [--to target]
 * [-s session]` (ADR 0034): a conversation out of one deployment as a self-contained JSON Lines
 * file (attachments' bytes inline), and into another (or the same one, under a new session).
 */
export function addConversationCommands(program: Command, ctx: ConversationCommandContext): void {
  program
    .command("export")
    .description("write a session's conversation as JSON Lines (records, then attachments with their bytes) to a file or stdout")
    .argument("<target>", "agent/instance")
    .option("-s, --session <session>", "the session of the instance", "default")
    .option("-o, --output <file>", "write to this file instead of stdout")
    .action(async (target: string, opts: { session: string; output?: string }) => {
      const { agent, instance } = ctx.parseTarget(target);
      const file = opts.output === undefined ? undefined : createWriteStream(opts.output);
      const write = async (text: string) => {
        if (file === undefined) ctx.stdout.write(text);
        else if (!file.write(text)) await once(file, "drain");
      };
      let records = 0;
      let attachments = 0;
      let complete = false;
      try {
        for await (const line of ctx.client().exportConversation(agent, instance, { session: opts.session, signal: ctx.signal })) {
          if (line.type === "record") records += 1;
          if (line.type === "attachment") attachments += 1;
          await write(`${terminalJson(line)}\n`);
        }
        complete = true;
      } finally {
        if (file !== undefined) await new Promise<void>((resolve, reject) => file.end((err?: Error | null) => (err ? reject(err) : resolve())));
        // A cut-off export (a refusal, bytes that failed their digest) leaves no file to import by mistake.
        if (!complete && opts.output !== undefined) await rm(opts.output, { force: true });
      }
      if (opts.output !== undefined) {
        ctx.print(`exported ${records} records and ${attachments} attachments to ${opts.output}`, { records, attachments, file: opts.output });
      }
    });

  program
    .command("import")
    .description("rebuild an exported conversation here, as a new session's conversation (record, conversation and submission ids renewed)")
    .argument("<file>", "a file written by harness export (or GET …/export)")
    .option("--to <target>", "agent/instance to import into (default: the exported one)")
    .option("-s, --session <session>", "the new session (default: the exported one's)")
    .action(async (file: string, opts: { to?: string; session?: string }) => {
      let text: string;
      try {
        text = await readFile(file, "utf8");
      } catch (err) {
        throw usageError("import", `cannot read ${file}: ${(err as Error).message}`);
      }
      // Checked here first, so a bad file uploads nothing; the server checks it again.
      let header;
      try {
        header = parseExport(text).header;
      } catch (err) {
        if (isHarnessError(err, "invalid_export")) throw new HarnessHttpError(400, "invalid_export", `${file}: ${err.message}`);
        throw err;
      }
      const { agent, instance } = opts.to === undefined ? header : ctx.parseTarget(opts.to);
      const session = opts.session ?? header.session;
      const answer = await ctx.client().importConversation(agent, instance, text, { session, signal: ctx.signal });
      ctx.print(
        `imported ${answer.records} records into ${one(answer.agent)}/${one(answer.instance)} session ${one(answer.session)} (conversation ${one(answer.conversationId)}; ${answer.attachments} attachments)`,
        answer,
      );
    });
}
