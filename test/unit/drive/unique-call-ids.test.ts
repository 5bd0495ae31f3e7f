import { describe, expect, it } from "vitest";
import type { AssistantMessage } from "@earendil-works/pi-ai";
import { renameRepeatedCallIds } from "../../../src/drive/unique-call-ids.ts";

const message = (...ids: string[]): AssistantMessage =>
  ({
    role: "assistant",
    content: [{ type: "text", text: "calling" }, ...ids.map((id) => ({ type: "toolCall", id, name: "t", arguments: {} }))],
  }) as unknown as AssistantMessage;
const idsOf = (m: AssistantMessage) => m.content.flatMap((b) => (b.type === "toolCall" ? [b.id] : []));

describe("renameRepeatedCallIds", () => {
  it("leaves fresh ids alone", () => {
    const m = message("a", "b");
    expect(renameRepeatedCallIds(m, new Set(["c"]))).toEqual([]);
    expect(idsOf(m)).toEqual(["a", "b"]);
  });

  it("renames an id the conversation used, and a repeat within the message, to the first free <id>_<n>", () => {
    const m = message("call_0", "call_1", "call_1");
    const renames = renameRepeatedCallIds(m, new Set(["call_0", "call_0_2"]));
    expect(idsOf(m)).toEqual(["call_0_3", "call_1", "call_1_2"]);
    expect(renames).toEqual([
      { from: "call_0", to: "call_0_3" },
      { from: "call_1", to: "call_1_2" },
    ]);
  });

  it("keeps a renamed id within 40 characters, so a provider that cuts ids there cannot merge it with its original", () => {
    const long = "x".repeat(45);
    const m = message(long);
    renameRepeatedCallIds(m, new Set([long]));
    const [renamed] = idsOf(m);
    expect(renamed).toBe(`${"x".repeat(38)}_2`);
    expect(renamed!.length).toBe(40);
  });
});
