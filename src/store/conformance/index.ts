/**
 * `resolute-harness/store/conformance`: the store conformance suite. Every `Store` adapter, in this
 * repository or a third party's, registers it from a vitest file; each case gets a fresh store
 * built by the factory with a fresh `ManualClock`, and the suite moves time through that clock and
 * never sleeps. Cases seed state through the public Store API only, so the suite also doubles as
 * crash-test scaffolding: any mid-crash engine state can be built the same way.
 *
 * @example
 * ```ts
 * import { createMemoryStore } from "resolute-harness/memory";
 * import { describeStoreConformance } from "resolute-harness/store/conformance";
 *
 * describeStoreConformance("memory", async (clock) => createMemoryStore({ clock }));
 * ```
 *
 * @module
 */
import { describe } from "vitest";
import type { ManualClock } from "../../ports/clock.ts";
import type { Store } from "../store.ts";
import { checkpointCases } from "./checkpoint-cases.ts";
import { concurrencyCases } from "./concurrency-cases.ts";
import { conversationCases } from "./conversation-cases.ts";
import { deletionCases } from "./deletion-cases.ts";
import { deltaFoldingCases } from "./delta-folding-cases.ts";
import { childOutcomeCases } from "./child-outcome-cases.ts";
import { caseRegistrar, type StoreConformanceOptions } from "./case-context.ts";
import { callWaitCases } from "./call-wait-cases.ts";
import { delayedMessageCases } from "./delayed-message-cases.ts";
import { inboxCases } from "./inbox-cases.ts";
import { listingCases } from "./listing-cases.ts";
import { activityCases } from "./activity-cases.ts";
import { submissionCases } from "./submission-cases.ts";
import { attemptCases } from "./attempt-cases.ts";
import { parkCases } from "./park-cases.ts";
import { cancelCases } from "./cancel-cases.ts";
import { waitCheckCases } from "./wait-check-cases.ts";

export type { CaseContext, Fixtures, StoreConformanceOptions, StoreFactory } from "./case-context.ts";
export { textOfBytes } from "./conversation-cases.ts";
export { cancellation } from "./case-context.ts";

/**
 * Registers the whole conformance suite as vitest `describe`/`it` cases under `name`.
 *
 * @param name label of the adapter under test (appears in test names)
 * @param factory builds a fresh, empty store reading time from `clock`; called once per case
 * @param options large-payload size and per-case teardown (default: `store.close()`)
 */
export function describeStoreConformance(
  name: string,
  factory: (clock: ManualClock) => Promise<Store>,
  options: StoreConformanceOptions = {},
): void {
  describe(`store conformance: ${name}`, () => {
    const test = caseRegistrar(factory, options);
    submissionCases(test);
    attemptCases(test);
    parkCases(test);
    cancelCases(test);
    conversationCases(test);
    inboxCases(test);
    listingCases(test);
    activityCases(test);
    concurrencyCases(test);
    childOutcomeCases(test);
    checkpointCases(test);
    waitCheckCases(test);
    callWaitCases(test);
    delayedMessageCases(test);
    deletionCases(test);
    deltaFoldingCases(test);
  });
}
