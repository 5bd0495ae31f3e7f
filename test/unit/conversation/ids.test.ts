import fc from "fast-check";
import { decodeTime } from "ulid";
import { describe, expect, it } from "vitest";
import { nextRecordIds } from "../../../src/conversation/ids.ts";

describe("nextRecordIds", () => {
  it("mints at the clock when the clock is past the head", () => {
    const [a] = nextRecordIds("", 1, 1_000_000);
    expect(decodeTime(a!)).toBe(1_000_000);
    const [b] = nextRecordIds(a!, 1, 2_000_000);
    expect(decodeTime(b!)).toBe(2_000_000);
    expect(b! > a!).toBe(true);
  });

  it("strictly increases even when the clock goes backwards or stands still", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1_000, max: 1_010 })), {
          minLength: 1,
          maxLength: 40,
        }),
        (steps) => {
          let head = "";
          for (const [count, now] of steps) {
            const ids = nextRecordIds(head, count, now);
            expect(ids).toHaveLength(count);
            for (const id of ids) {
              expect(id > head).toBe(true);
              head = id;
            }
          }
        },
      ),
    );
  });
});
