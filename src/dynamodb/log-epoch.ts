/**
 * Fence epochs: which claim of a session's submissions a conversation's log has seen last.
 * An epoch is `<admission seq, 12 digits>:<claim number, 6 digits>`, so it grows with every
 * claim in the session (submissions run one at a time, in admission order) and compares as a
 * string. A settlement record closes its submission: `<seq>:~` sorts above every claim of it.
 *
 * Each batch carries the highest epoch written so far; a fenced writer refuses to append after
 * a batch with a higher epoch than its own. That is the fence's second half (the first is the
 * state check, `conversation-log.ts`): it closes the window between a stale writer's check and
 * its put, because a new owner writes its epoch into the log (a takeover marker) before it
 * reads the log, and a settlement writes its closing epoch with its record.
 */
import { type Item, num, reqNum } from "./item.ts";
import { pad } from "./keys.ts";

const SEQ_WIDTH = 12;
const CLAIM_WIDTH = 6;

/** The epoch of the claim a state item holds (its `seq` and `claims` count). */
export function claimEpoch(state: Item): string {
  return `${pad(reqNum(state, "seq"), SEQ_WIDTH)}:${pad(num(state, "claims") ?? 0, CLAIM_WIDTH)}`;
}

/**
 * Above every claim the state item has had so far, below its next claim's epoch: a settlement
 * without a record (a cancel) closes the attempts that existed when it read the state, and a
 * claim that wins the race against it stays valid.
 */
export function retiredEpoch(state: Item): string {
  return `${claimEpoch(state)}~`;
}

/** Above every claim of the submission whose state item this is. */
export function closingEpoch(state: Item): string {
  return `${pad(reqNum(state, "seq"), SEQ_WIDTH)}:~`;
}

export function maxEpoch(...epochs: (string | undefined)[]): string {
  let max = "";
  for (const e of epochs) if (e !== undefined && e > max) max = e;
  return max;
}
