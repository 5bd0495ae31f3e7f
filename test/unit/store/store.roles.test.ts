import { describe, expectTypeOf, it } from "vitest";
import type { Store, StoreRoles } from "../../../src/store/store.ts";

// Type-level: `npm run typecheck` fails when a Store method has no role, or a role names
// something the Store lacks (the test body runs nothing that could fail at run time).
describe("the store port by role", () => {
  it("Store is exactly the union of its roles", () => {
    expectTypeOf<Exclude<keyof Store, keyof StoreRoles | "close">>().toEqualTypeOf<never>();
    expectTypeOf<Exclude<keyof StoreRoles, keyof Store>>().toEqualTypeOf<never>();
    expectTypeOf<Store>().toExtend<StoreRoles>();
  });
});
