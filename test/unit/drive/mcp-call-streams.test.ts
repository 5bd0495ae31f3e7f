/** The fetch that tells a call over streamable HTTP its response stream broke (issue 36 part 1). */
import { expect, it } from "vitest";
import { CALL_ID_META, watchingFetch } from "../../../src/drive/mcp-call-streams.ts";

function brokenStream(): ReadableStream<Uint8Array> {
  let sent = false;
  return new ReadableStream({
    pull(controller) {
      if (!sent) {
        sent = true;
        controller.enqueue(new TextEncoder().encode("event: message\n"));
      } else controller.error(new Error("terminated"));
    },
  });
}

const callBody = (callId: string) => JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "slow", _meta: { [CALL_ID_META]: callId } } });

it("a POST carrying a call whose body breaks names the call; the reader still sees the break", async () => {
  const lost: Array<{ ids: string[]; error: unknown }> = [];
  const fetch = watchingFetch((ids, error) => lost.push({ ids, error }), async () => new Response(brokenStream(), { headers: { "content-type": "text/event-stream" } }));
  const response = await fetch("http://x/mcp", { method: "POST", body: callBody("call_1") });
  expect(response.headers.get("content-type")).toBe("text/event-stream");
  await expect(response.text()).rejects.toThrow("terminated");
  expect(lost).toMatchObject([{ ids: ["call_1"], error: { message: "terminated" } }]);
});

it("other requests pass untouched, and a body that ends normally names nothing", async () => {
  const lost: string[][] = [];
  const fetch = watchingFetch((ids) => lost.push(ids), async () => new Response("ok"));
  expect(await (await fetch("http://x/mcp", { method: "POST", body: callBody("call_2") })).text()).toBe("ok");
  const broken = watchingFetch((ids) => lost.push(ids), async () => new Response(brokenStream()));
  await expect((await broken("http://x/mcp", { method: "POST", body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) })).text()).rejects.toThrow();
  await expect((await broken("http://x/mcp", { method: "GET" })).text()).rejects.toThrow();
  expect(lost).toEqual([]);
});
