/**
 * The runtime as one caller reaches it (ADR 0043): every method checks the policy for its action
 * and target before the runtime reads or writes anything, so no route (HTTP, MCP) checks access on
 * its own and none can forget to. Built per request by `Runtime.as(principal)`.
 */
import { attachmentDigests } from "../conversation/attachment-digests.ts";
import { Forbidden, isHarnessError, SubmissionNotFound } from "../errors.ts";
import type { DispatchMessage } from "../protocol/dispatch.ts";
import type { SubmissionDetail } from "../protocol/submission-view.ts";
import { OPERATOR_PRINCIPAL, type AccessAction, type AccessTarget, type Authorize, type Principal } from "../protocol/principal.ts";
import type { AttachmentRef, SettledPayload } from "../protocol/records.ts";
import type { AttachmentStore } from "../store/store.ts";
import { sessionKeyOf, type InstanceAddress, type SessionAddress, type KnowsAgent, type SubmissionAddress } from "./requests.ts";
import type { RuntimeRequests } from "./runtime-requests.ts";

/**
 * What a caller may ask of the runtime: its request methods, each authorized. Methods that name a
 * conversation or submission by id alone (`records`, `sessionLive`'s stream, `onAppend`, `wait`)
 * serve only the ids this face itself reached through an authorized address (a stream opened with
 * `conversation`, a submission it admitted): `Forbidden` otherwise.
 */
export interface CallerRuntime
  extends Pick<
    RuntimeRequests,
    | "dispatch"
    | "compact"
    | "steer"
    | "followUp"
    | "decide"
    | "pendingApprovals"
    | "conversation"
    | "sessionLive"
    | "listSubmissions"
    | "submission"
    | "activity"
    | "retry"
    | "answerCallback"
    | "callTool"
    | "deleteConversation"
    | "fork"
    | "exportConversation"
    | "importConversation"
    | "uploadAttachment"
    | "createAttachmentUpload"
    | "attachmentLimits"
    | "hasAgent"
    | "agentCatalog"
    | "records"
    | "onAppend"
    | "wait"
  > {
  /** Who this face acts for. */
  readonly principal: Principal;
  /** As `Runtime.cancel`, always within the agent instance the caller names. */
  cancel(submissionId: string, reason: string | undefined, within: InstanceAddress): ReturnType<RuntimeRequests["cancel"]>;
  /**
   * A submission named by its id alone (an MCP task id): its address and detail when the policy
   * lets this caller read its agent instance (the `submission` action). Refused, it is
   * `SubmissionNotFound` as an unknown id is, so an id names nothing the caller may not see.
   * The submission (and its conversation) then count as reached: `wait` and `records` serve them.
   */
  submissionById(submissionId: string): Promise<{ address: SubmissionAddress; detail: SubmissionDetail }>;
  /** As `Runtime.completeAttachmentUpload`; the caller becomes an uploader of the bytes it sent. */
  completeAttachmentUpload(uploadId: string): Promise<AttachmentRef>;
  /**
   * An attachment's bytes (ADR 0046): read by its uploader, by whom the policy lets read it (the
   * operator), or through `via`, a session whose conversation the caller may read and whose
   * records reference the digest. `Forbidden` otherwise, before the bytes are read.
   */
  attachment(digest: string, via?: SessionAddress): Promise<{ ref: AttachmentRef; data: Uint8Array }>;
}

/**
 * The face of `runtime` for `caller` under `authorize`. `caller` undefined is a caller no
 * authentication named (a server without `auth`): the policy is asked as for the operator, and no
 * principal id is recorded on what it sends. `uploads` answers who uploaded an attachment.
 */
export function callerRuntime(
  runtime: RuntimeRequests,
  caller: Principal | undefined,
  authorize: Authorize,
  uploads: Pick<AttachmentStore, "isAttachmentUploader">,
): CallerRuntime {
  const principal = caller ?? OPERATOR_PRINCIPAL;
  // Who said it (ADR 0043): the authenticated caller's id goes on its messages and decisions.
  const stamp = <T extends object>(message: T): T => (caller === undefined ? message : { ...message, principalId: caller.id });
  const knows: KnowsAgent = (name) => runtime.hasAgent(name);
  // Ids this face reached through an authorized address: only these may be named by id alone.
  const conversations = new Set<string>();
  const submissions = new Set<string>();

  const allows = async (action: AccessAction, target: AccessTarget): Promise<boolean> => {
    try {
      return (await authorize(principal, action, target)) === true;
    } catch {
      // A policy that throws refuses: fail closed.
      return false;
    }
  };
  const check = async (action: AccessAction, target: AccessTarget): Promise<void> => {
    if (!(await allows(action, target))) throw new Forbidden(action, describe(target));
  };
  /** Checks the address's rules first (a bad id is a 400 whoever asks), then the policy. */
  const checkSession = async (action: AccessAction, address: SessionAddress, sessionNamed = true): Promise<void> => {
    const key = sessionKeyOf(address, knows);
    const target: AccessTarget = sessionNamed
      ? { kind: "session", agent: key.agent, instance: key.instance, session: key.session }
      : { kind: "session", agent: key.agent, instance: key.instance };
    await check(action, target);
  };
  const admitted = <T extends { submissionId: string; conversationId: string }>(result: T): T => {
    submissions.add(result.submissionId);
    conversations.add(result.conversationId);
    return result;
  };
  /** Whether the conversation of `via` has records that reference `digest` (no conversation: no). */
  const referencedBy = async (via: SessionAddress, digest: string): Promise<boolean> => {
    let conversationId: string;
    try {
      conversationId = (await runtime.conversation(via)).id;
    } catch (err) {
      if (isHarnessError(err, "conversation_not_found")) return false;
      throw err;
    }
    return attachmentDigests(await runtime.records(conversationId)).has(digest);
  };
  /**
   * May the caller use attachment `digest` (read it, or reference it in a message)? When the
   * policy allows `attachment` knowing whether the caller uploaded it, or else when `via` is a
   * session the policy lets it read (`conversation`) whose records reference the digest.
   */
  const checkAttachment = async (digest: string, via?: SessionAddress): Promise<void> => {
    const uploaded = caller !== undefined && (await uploads.isAttachmentUploader(digest, caller.id));
    if (await allows("attachment", { kind: "attachment", digest, uploaded })) return;
    if (via !== undefined) {
      await checkSession("conversation", via);
      if (await referencedBy(via, digest)) return;
    }
    const through = via === undefined ? "" : ", nor referenced by the conversation named";
    throw new Forbidden("attachment", `attachment ${digest} (not uploaded by ${principal.id}${through})`);
  };
  /** Every attachment a message references must be one the caller may use (`via`: where it goes or comes from). */
  const checkMessageAttachments = async (message: DispatchMessage | undefined, via: SessionAddress): Promise<void> => {
    // A malformed message is the runtime's to refuse (400): only well-formed digests are checked here.
    const attachments: unknown = message?.attachments;
    if (!Array.isArray(attachments)) return;
    const digests = new Set<string>();
    for (const ref of attachments) if (typeof (ref as Partial<AttachmentRef> | null)?.digest === "string") digests.add((ref as AttachmentRef).digest);
    for (const digest of digests) await checkAttachment(digest, via);
  };
  const reached = (what: "conversation" | "submission", id: string): void => {
    const known = what === "conversation" ? conversations : submissions;
    if (!known.has(id)) throw new Forbidden(what, `${what} ${id} (not reached through an authorized address)`);
  };

  return {
    principal,
    hasAgent: (name) => runtime.hasAgent(name),
    agentCatalog: () => runtime.agentCatalog(),
    attachmentLimits: () => runtime.attachmentLimits(),
    async dispatch(request) {
      await checkSession("dispatch", request);
      await checkMessageAttachments(request.message, request);
      return admitted(await runtime.dispatch({ ...request, message: stamp(request.message) }));
    },
    async compact(address) {
      await checkSession("compact", address);
      return admitted(await runtime.compact(address));
    },
    async steer(request) {
      await checkSession("steer", request);
      return runtime.steer(stamp(request));
    },
    async followUp(request) {
      await checkSession("followUp", request);
      return runtime.followUp(stamp(request));
    },
    async cancel(submissionId, reason, within) {
      await checkSession("cancel", within, false);
      return runtime.cancel(submissionId, reason, within);
    },
    async decide(request) {
      await checkSession("decide", request, false);
      return runtime.decide(caller === undefined ? request : { ...request, decidedBy: caller.id });
    },
    async pendingApprovals(address) {
      await checkSession("pendingApprovals", address);
      return runtime.pendingApprovals(address);
    },
    async conversation(address) {
      await checkSession("conversation", address);
      const conversation = await runtime.conversation(address);
      conversations.add(conversation.id);
      return conversation;
    },
    async sessionLive(address) {
      await checkSession("conversation", address);
      return runtime.sessionLive(address);
    },
    async records(conversationId, afterId, limit) {
      reached("conversation", conversationId);
      return runtime.records(conversationId, afterId, limit);
    },
    onAppend(conversationId, listener) {
      reached("conversation", conversationId);
      return runtime.onAppend(conversationId, listener);
    },
    async wait(submissionId, options): Promise<SettledPayload> {
      reached("submission", submissionId);
      return runtime.wait(submissionId, options);
    },
    async submissionById(submissionId) {
      const address = await runtime.locateSubmission(submissionId);
      try {
        await checkSession("submission", address, false);
      } catch (err) {
        if (err instanceof Forbidden) throw new SubmissionNotFound(submissionId);
        throw err;
      }
      const detail = await runtime.submission(address);
      submissions.add(detail.id);
      conversations.add(detail.conversationId);
      return { address, detail };
    },
    async listSubmissions(request) {
      await checkSession("listSubmissions", request);
      return runtime.listSubmissions(request);
    },
    async retry(submissionId) {
      // Across the deployment by id alone: the operator's (the new dispatch is the operator's too).
      await check("console", { kind: "deployment" });
      return admitted(await runtime.retry(submissionId));
    },
    async callTool(call) {
      // Acts on the world outside any run, skipping approval: the operator's, and only in dev.
      await check("console", { kind: "deployment" });
      return runtime.callTool(call);
    },
    async answerCallback(submissionId, callId, answer) {
      // By submission and call, across the deployment: the operator's (a third party answers by its callback id).
      await check("console", { kind: "deployment" });
      return runtime.answerCallback(submissionId, callId, answer);
    },
    async activity(request) {
      await check("console", { kind: "deployment" });
      return runtime.activity(request);
    },
    async submission(request) {
      await checkSession("submission", request, false);
      return runtime.submission(request);
    },
    async deleteConversation(request) {
      await checkSession("deleteConversation", request);
      return runtime.deleteConversation(request);
    },
    async fork(request) {
      // A fork reads the source as an export does and writes the target as an import does.
      await checkSession("exportConversation", request);
      const target = { agent: request.agent, instance: request.targetInstance ?? request.instance, session: request.targetSession };
      await checkSession("importConversation", target, request.targetSession !== undefined);
      if (request.message !== undefined) await checkSession("dispatch", target, request.targetSession !== undefined);
      // The message's attachments come from the source (an edited message's): used through it.
      await checkMessageAttachments(request.message, request);
      const forked = await runtime.fork(request.message === undefined ? request : { ...request, message: stamp(request.message) });
      if (forked.submissionId !== undefined) submissions.add(forked.submissionId);
      return forked;
    },
    async exportConversation(address) {
      await checkSession("exportConversation", address);
      return runtime.exportConversation(address);
    },
    async importConversation(address, text) {
      await checkSession("importConversation", address);
      return runtime.importConversation(address, text);
    },
    async uploadAttachment(upload) {
      await check("uploadAttachment", { kind: "attachment" });
      const { contentType, data } = upload;
      return runtime.uploadAttachment(caller === undefined ? { contentType, data } : { contentType, data, uploadedBy: caller.id });
    },
    async createAttachmentUpload(declared) {
      await check("uploadAttachment", { kind: "attachment" });
      return runtime.createAttachmentUpload(declared);
    },
    async completeAttachmentUpload(uploadId) {
      await check("uploadAttachment", { kind: "attachment" });
      return runtime.completeAttachmentUpload(uploadId, caller?.id);
    },
    async attachment(digest, via) {
      await checkAttachment(digest, via);
      return runtime.attachment(digest);
    },
  };
}

function describe(target: AccessTarget): string {
  if (target.kind === "deployment") return "the deployment";
  if (target.kind === "attachment") return target.digest === undefined ? "attachments" : `attachment ${target.digest}`;
  return `${target.agent}/${target.instance}${target.session === undefined ? "" : ` session ${target.session}`}`;
}
