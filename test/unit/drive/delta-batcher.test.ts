import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../src/ports/clock.ts";
import { DEFAULT_FLUSH_POLICY, DeltaBatcher } from "../../../src/drive/delta-batcher.ts";

const T = "assistant_text_delta" as const;
const K = "assistant_thinking_delta" as const;

describe("DeltaBatcher (spec §1.5.3)", () => {
  it("defaults to 1024 bytes / 200 ms", () => {
    expect(DEFAULT_FLUSH_POLICY).toEqual({ bytes: 1024, intervalMs: 200 });
  });

  it("holds fragments until the byte threshold is reached, then flushes them as one batch", () => {
    const b = new DeltaBatcher({ bytes: 8, intervalMs: 1000 }, new ManualClock());
    expect(b.push(T, "abc")).toEqual([]);
    expect(b.push(T, "def")).toEqual([]);
    expect(b.push(T, "gh")).toEqual([{ kind: T, text: "abcdefgh" }]);
    expect(b.pending).toBe(false);
    expect(b.take()).toBeUndefined();
  });

  it("counts UTF-8 bytes, not UTF-16 units", () => {
    const b = new DeltaBatcher({ bytes: 4, intervalMs: 1000 }, new ManualClock());
    expect(b.push(T, "é")).toEqual([]); // 2 bytes
    expect(b.push(T, "é")).toEqual([{ kind: T, text: "éé" }]);
  });

  it("flushes when the first pending fragment is interval old, evaluated when the next fragment arrives", async () => {
    const clock = new ManualClock();
    const b = new DeltaBatcher({ bytes: 1024, intervalMs: 200 }, clock);
    expect(b.push(T, "a")).toEqual([]);
    await clock.advance(199);
    expect(b.push(T, "b")).toEqual([]);
    await clock.advance(1);
    // 200 ms since the first fragment: this fragment is included in the flush.
    expect(b.push(T, "c")).toEqual([{ kind: T, text: "abc" }]);
    // The next batch's age counts from its own first fragment.
    expect(b.push(T, "d")).toEqual([]);
    await clock.advance(500);
    expect(b.pending).toBe(true); // no timer: a stale tail waits
    expect(b.push(T, "e")).toEqual([{ kind: T, text: "de" }]);
  });

  it("a fragment of a different kind flushes the pending batch first", () => {
    const b = new DeltaBatcher({ bytes: 1024, intervalMs: 1000 }, new ManualClock());
    b.push(K, "think");
    expect(b.push(T, "say")).toEqual([{ kind: K, text: "think" }]);
    expect(b.take()).toEqual({ kind: T, text: "say" });
  });

  it("a kind switch and a threshold can flush two batches at once, in order", () => {
    const b = new DeltaBatcher({ bytes: 3, intervalMs: 1000 }, new ManualClock());
    b.push(K, "ab");
    expect(b.push(T, "xyz")).toEqual([
      { kind: K, text: "ab" },
      { kind: T, text: "xyz" },
    ]);
  });

  it("take() returns the trailing batch (boundary / stream end) and empties the buffer", () => {
    const b = new DeltaBatcher(DEFAULT_FLUSH_POLICY, new ManualClock());
    b.push(T, "tail");
    expect(b.take()).toEqual({ kind: T, text: "tail" });
    expect(b.take()).toBeUndefined();
  });

  it("a policy of 1 byte flushes every fragment (embedded stores)", () => {
    const b = new DeltaBatcher({ bytes: 1, intervalMs: 0 }, new ManualClock());
    expect(b.push(T, "a")).toEqual([{ kind: T, text: "a" }]);
    expect(b.push(T, "b")).toEqual([{ kind: T, text: "b" }]);
  });

  it("after messageStarted, the first fragment of each kind flushes at once; later ones by the policy (ADR 0036)", () => {
    const b = new DeltaBatcher(DEFAULT_FLUSH_POLICY, new ManualClock());
    expect(b.push(T, "before"), "no message started: the policy alone").toEqual([]);
    expect(b.take()).toEqual({ kind: T, text: "before" });
    b.messageStarted();
    expect(b.push(K, "")).toEqual([]); // an empty fragment is not the first
    expect(b.push(K, "hm")).toEqual([{ kind: K, text: "hm" }]);
    expect(b.push(K, "m")).toEqual([]);
    // The kind switch flushes the pending thinking; the text's first fragment follows at once.
    expect(b.push(T, "Hi")).toEqual([
      { kind: K, text: "m" },
      { kind: T, text: "Hi" },
    ]);
    expect(b.push(T, " there")).toEqual([]);
    expect(b.push(K, "again")).toEqual([{ kind: T, text: " there" }]); // not the message's first thinking fragment
    expect(b.take()).toEqual({ kind: K, text: "again" });
    b.messageStarted(); // the next message: first fragments at once again
    expect(b.push(T, "x")).toEqual([{ kind: T, text: "x" }]);
    expect(b.push(T, "y")).toEqual([]);
  });

  it("ignores empty fragments", () => {
    const b = new DeltaBatcher({ bytes: 1, intervalMs: 0 }, new ManualClock());
    expect(b.push(T, "")).toEqual([]);
    expect(b.pending).toBe(false);
  });
});

describe("utf8Length", () => {
  it("matches Buffer.byteLength", async () => {
    const { utf8Length } = await import("../../../src/drive/delta-batcher.ts");
    for (const s of ["", "abc", "é", "€", "😀", "a😀b", "\ud800", "\udc00x", "日本語", "x\u07ff\u0800"]) {
      expect(utf8Length(s)).toBe(Buffer.byteLength(s, "utf8"));
    }
    // Any sequence of UTF-16 code units, lone surrogates included.
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 0xffff })).map((units) => String.fromCharCode(...units)),
        (s) => utf8Length(s) === Buffer.byteLength(s, "utf8"),
      ),
    );
  });
});
