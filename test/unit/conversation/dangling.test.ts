import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  DANGLING_TOOL_CALL_MESSAGE,
  danglingToolCalls,
  danglingToolOutcome,
} from "../../../src/conversation/dangling.ts";
import { activeLeafPath, reduce } from "../../../src/conversation/reducer.ts";
import type { ConversationRecord } from "../../../src/protocol/records.ts";
import { rec } from "./fixtures.ts";

const call = (id: string, callId: string, thoughtSignature?: string): ConversationRecord =>
  rec(id, "assistant_tool_call", {
    callId,
    toolName: "echo",
    args: { x: 1 },
    ...(thoughtSignature === undefined ? {} : { thoughtSignature }),
  });
const outcome = (id: string, callId: string): ConversationRecord =>
  rec(id, "tool_outcome", { callId, toolName: "echo", content: [{ type: "text", text: "ok" }] });

describe("danglingToolCalls", () => {
  it("keeps the message byte-exact", () => {
    expect(DANGLING_TOOL_CALL_MESSAGE).toBe(
      "Tool call was interrupted before a result was recorded (the run was recovered). Re-issue the tool call if it is still needed.",
    );
  });

  it("lists calls without an outcome, in path order, with their full payload", () => {
    const path = [
      rec("a", "user_message", { body: "go" }),
      call("b", "c1"),
      call("c", "c2", "c2lnCg=="),
      call("d", "c3"),
      outcome("e", "c2"),
    ];
    expect(danglingToolCalls(path)).toEqual([
      { callId: "c1", toolName: "echo", args: { x: 1 } },
      { callId: "c3", toolName: "echo", args: { x: 1 } },
    ]);
  });

  it("is empty when every call is answered, and for an empty path", () => {
    expect(danglingToolCalls([call("a", "c1"), outcome("b", "c1")])).toEqual([]);
    expect(danglingToolCalls([])).toEqual([]);
  });

  it("reports a call id recorded twice once", () => {
    expect(danglingToolCalls([call("a", "c1"), call("b", "c1")]).map((c) => c.callId)).toEqual(["c1"]);
  });

  it("only looks at the active path: calls summarized away by a compaction are not dangling", () => {
    const log = [
      call("a", "old"),
      rec("b", "user_message", { body: "kept" }),
      rec("s", "compaction", { summary: "…", firstKeptEntryId: "b", startIdx: 0, endIdx: 0 }),
      call("c", "new"),
    ];
    expect(danglingToolCalls(activeLeafPath(reduce(log))).map((c) => c.callId)).toEqual(["new"]);
  });

  it("also answers calls of a kept assistant message whose tool-call records a compaction cut off", () => {
    const body = (stopReason: string) => ({
      role: "assistant",
      content: [
        { type: "text", text: "checking" },
        { type: "toolCall", id: "c1", name: "echo", arguments: { x: 1 }, thoughtSignature: "c2ln" },
      ],
      stopReason,
    });
    const log = [
      rec("a", "user_message", { body: "go" }),
      call("b", "c1"),
      rec("c", "assistant_message_completed", { message: { role: "assistant", type: "message", body: body("toolUse") } }),
      rec("s", "compaction", { summary: "…", firstKeptEntryId: "c", startIdx: 0, endIdx: 1 }),
    ];
    const path = activeLeafPath(reduce(log));
    expect(path.map((r) => r.id)).toEqual(["s", "c"]);
    expect(danglingToolCalls(path)).toEqual([{ callId: "c1", toolName: "echo", args: { x: 1 }, thoughtSignature: "c2ln" }]);
    // A dropped (error/aborted) message's blocks need no answer; its records still count.
    const aborted = rec("c", "assistant_message_completed", {
      message: { role: "assistant", type: "message", body: body("aborted") },
    });
    expect(danglingToolCalls([aborted])).toEqual([]);
    expect(danglingToolCalls([call("b", "c1"), aborted]).map((c) => c.callId)).toEqual(["c1"]);
  });

  it("a synthesized outcome answers the call", () => {
    const payload = { callId: "c1", toolName: "echo", thoughtSignature: "c2ln" };
    expect(danglingToolOutcome(payload)).toEqual({
      callId: "c1",
      toolName: "echo",
      content: [{ type: "text", text: DANGLING_TOOL_CALL_MESSAGE }],
      isError: true,
    });
    fc.assert(
      fc.property(
        fc.array(fc.record({ callId: fc.constantFrom("c1", "c2", "c3", "c4"), answered: fc.boolean() }), {
          maxLength: 12,
        }),
        (calls) => {
          const path: ConversationRecord[] = [];
          calls.forEach(({ callId, answered }, i) => {
            path.push(call(`k${i}`, callId));
            if (answered) path.push(outcome(`o${i}`, callId));
          });
          const dangling = danglingToolCalls(path);
          const answeredIds = new Set(calls.filter((c) => c.answered).map((c) => c.callId));
          expect(dangling.map((c) => c.callId)).toEqual([
            ...new Set(calls.map((c) => c.callId).filter((id) => !answeredIds.has(id))),
          ]);
          const repaired = [
            ...path,
            ...dangling.map((c, i) => rec(`z${i}`, "tool_outcome", danglingToolOutcome(c))),
          ];
          expect(danglingToolCalls(repaired)).toEqual([]);
        },
      ),
    );
  });
});
