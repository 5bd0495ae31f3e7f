import { encodeTime, incrementBase32, ulid as mintUlid } from "ulid";

/**
 * A cryptographic PRNG that draws its bytes in blocks: ulid asks for 16 random numbers per id,
 * and one `getRandomValues` call per number was a measurable share of an append's CPU.
 */
const randomBlock = new Uint8Array(4096);
let randomOffset = randomBlock.length;
function bufferedPrng(): number {
  if (randomOffset >= randomBlock.length) {
    crypto.getRandomValues(randomBlock);
    randomOffset = 0;
  }
  return randomBlock[randomOffset++]! / 256;
}

const ulid = (nowMs: number): string => mintUlid(nowMs, bufferedPrng);

/** A fresh ULID stamped with `nowMs` (submission, attempt, turn, owner and conversation ids). */
export function newId(nowMs: number): string {
  return ulid(nowMs);
}

/**
 * A string that sorts below every id minted at `nowMs` or later (and above those minted before):
 * a read `after` it starts at that time.
 */
export function idFloor(nowMs: number): string {
  return encodeTime(Math.max(0, nowMs), 10);
}

/**
 * The next `count` record ids after `head` ("" for an empty log). Ids strictly increase per
 * conversation whatever the clock says: when `nowMs` is not past the head's time (clock skew
 * between writers, or a clock that went backwards) the head's random part is incremented
 * instead of minting at `nowMs`. Pure, so every store derives ids the same way from the head
 * it holds under its conditional write.
 */
export function nextRecordIds(head: string, count: number, nowMs: number): string[] {
  const ids: string[] = [];
  let last = head;
  for (let i = 0; i < count; i++) {
    // The first 10 characters encode the time and sort like it: compare them as strings.
    last = last !== "" && last.slice(0, 10) >= encodeTime(nowMs, 10) ? incrementBase32(last) : ulid(nowMs);
    // A fresh ULID at the same millisecond as `last` may sort below it; increment instead.
    if (ids.length > 0 && last <= ids[ids.length - 1]!) last = incrementBase32(ids[ids.length - 1]!);
    ids.push(last);
  }
  return ids;
}
