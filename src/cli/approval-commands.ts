import type { Command } from "commander";
import type { HarnessClient } from "../client/client.ts";
import type { ApprovalDecision } from "../protocol/approvals.ts";
import { terminalText } from "./terminal-text.ts";

/** What the approval commands borrow from the program. */
export interface ApprovalCommandContext {
  client(): HarnessClient;
  print(human: string, json: unknown): void;
  parseTarget(target: string): { agent: string; instance: string };
  signal?: AbortSignal;
}

/**
 * `harness approve|deny <target> <submissionId> <callId> [--reason]` (ADR 0025): decides a call
 * that asked approval. The same decision again succeeds (it stands); another is refused (exit 3,
 * `already_decided`).
 */
export function addApprovalCommands(program: Command, ctx: ApprovalCommandContext): void {
  for (const verb of ["approve", "deny"] as const) {
    program
      .command(verb)
      .description(
        verb === "approve"
          ? "approve a tool call that waits for a person's decision: it runs once and the run goes on"
          : "deny a tool call that waits for a person's decision: it does not run, the model reads the denial",
      )
      .argument("<target>", "agent/instance")
      .argument("<submissionId>", "the waiting submission")
      .argument("<callId>", "the call to decide (harness ls shows the pending ones)")
      .option("--reason <text>", "why; the model reads it")
      .action(async (target: string, submissionId: string, callId: string, opts: { reason?: string }) => {
        const { agent, instance } = ctx.parseTarget(target);
        const options = { ...(opts.reason !== undefined ? { reason: opts.reason } : {}), signal: ctx.signal };
        const c = ctx.client();
        const decision = verb === "approve" ? await c.approve(agent, instance, submissionId, callId, options) : await c.deny(agent, instance, submissionId, callId, options);
        ctx.print(decisionLine(decision), decision);
      });
  }
}

function decisionLine(d: ApprovalDecision): string {
  const what = d.approved ? "approved" : d.expired ? "denied (approval expired)" : "denied";
  return `${terminalText(d.callId)} ${what}${d.reason && !d.expired ? `: ${terminalText(d.reason)}` : ""}`;
}
