import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SseParser, type SseEvent } from "../../../src/client/sse-parser.ts";

interface Parsed {
  events: SseEvent[];
  retries: number[];
  comments: string[];
  parser: SseParser;
}

function parse(chunks: string | string[], lastEventId?: string): Parsed {
  const out: Parsed = { events: [], retries: [], comments: [], parser: undefined as unknown as SseParser };
  out.parser = new SseParser(
    { event: (e) => out.events.push(e), retry: (ms) => out.retries.push(ms), comment: (c) => out.comments.push(c) },
    lastEventId,
  );
  for (const chunk of typeof chunks === "string" ? [chunks] : chunks) out.parser.feed(chunk);
  return out;
}

describe("SseParser", () => {
  it("parses event, data and id fields; a block without event is a message", () => {
    const { events, parser } = parse("event: user_message\ndata: {\"a\":1}\nid: 01A\n\ndata: plain\n\n");
    expect(events).toEqual([
      { type: "user_message", data: '{"a":1}', lastEventId: "01A" },
      { type: "message", data: "plain", lastEventId: "01A" },
    ]);
    expect(parser.lastEventId).toBe("01A");
  });

  it("joins multi-line data with \\n and keeps empty data lines", () => {
    const { events } = parse("data: one\ndata:two\ndata\ndata:  three\n\n");
    expect(events).toEqual([{ type: "message", data: "one\ntwo\n\n three", lastEventId: "" }]);
  });

  it("accepts CRLF, CR and LF line ends, also split across chunks", () => {
    const expected = [
      { type: "a", data: "1", lastEventId: "x" },
      { type: "b", data: "2", lastEventId: "x" },
    ];
    expect(parse("event: a\r\ndata: 1\r\nid: x\r\n\r\nevent: b\rdata: 2\r\r").events).toEqual(expected);
    expect(parse(["event: a\r", "\ndata: 1\r", "\nid: x\r", "\n\r", "\nevent: b\r", "data: 2\r", "\r"]).events).toEqual(expected);
    // A lone CR at a chunk end followed by a non-LF still ends the line.
    expect(parse(["data: 1\r", "\r"]).events).toEqual([{ type: "message", data: "1", lastEventId: "" }]);
    expect(parse(["data: 1\r", "", "\n\n"]).events).toEqual([{ type: "message", data: "1", lastEventId: "" }]);
  });

  it("reports comments and ignores them as fields", () => {
    const { events, comments } = parse(": connected\n:keep-alive\ndata: x\n: inside\n\n");
    expect(comments).toEqual([" connected", "keep-alive", " inside"]);
    expect(events).toEqual([{ type: "message", data: "x", lastEventId: "" }]);
  });

  it("takes retry only when it is all digits", () => {
    const { retries, events } = parse("retry: 1000\n\nretry: 2.5\nretry: -1\nretry:\nretry: 30\n\n");
    expect(retries).toEqual([1000, 30]);
    expect(events).toEqual([]);
  });

  it("an id without data moves the last event id but dispatches nothing", () => {
    const { events, parser } = parse("id: 7\n\n");
    expect(events).toEqual([]);
    expect(parser.lastEventId).toBe("7");
    // The id persists to later events; an empty id clears it; an id with NUL is ignored.
    const later = parse("id: 7\n\ndata: a\n\nid\ndata: b\n\nid: z\0z\ndata: c\n\n");
    expect(later.events.map((e) => e.lastEventId)).toEqual(["7", "", ""]);
  });

  it("does not dispatch or adopt the id of an unterminated block", () => {
    const { events, parser } = parse("data: a\nid: 1\n\ndata: b\nid: 2\n", "0");
    expect(events).toEqual([{ type: "message", data: "a", lastEventId: "1" }]);
    expect(parser.lastEventId).toBe("1");
    expect(parse("data: b\nid: 2", "0").parser.lastEventId).toBe("0");
  });

  it("splits fields at the first colon, strips one space, ignores unknown fields", () => {
    const { events } = parse("data:a: b\nfoo: bar\nevent:  spaced\n\n");
    expect(events).toEqual([{ type: " spaced", data: "a: b", lastEventId: "" }]);
  });

  it("gives the same events however the text is chunked", () => {
    const text = ": hi\nretry: 5\n\nevent: k\ndata: é✓\r\ndata: 2\rid: 9\n\nid: 10\n\ndata: last\n\n";
    const whole = parse(text);
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: text.length - 1 }), { maxLength: 12 }), (cuts) => {
        const points = [0, ...cuts.sort((a, b) => a - b), text.length];
        const chunks = points.slice(1).map((end, i) => text.slice(points[i], end));
        const split = parse(chunks);
        expect(split.events).toEqual(whole.events);
        expect(split.retries).toEqual(whole.retries);
        expect(split.comments).toEqual(whole.comments);
        expect(split.parser.lastEventId).toBe("10");
      }),
    );
  });
});
