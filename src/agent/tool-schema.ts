/**
 * Builders of JSON Schema for tool parameters (pi's `@earendil-works/pi-schema`), re-exported as
 * `schema` from `resolute-harness` so typed tools need no other dependency. Each builder records
 * the type of the values it accepts, so {@link defineTool} types a tool's `params` from them
 * (a plain JSON Schema object types them as `unknown`). Arguments are validated (and coerced,
 * e.g. `"3"` for an `int()`) against the schema before `execute` runs.
 *
 *   schema.obj({ city: schema.str(), days: schema.opt(schema.int({ minimum: 1 })) })
 *   // accepts { city: string; days?: number }
 */
export {
  arr,
  bool,
  int,
  lit,
  map,
  nul,
  nullable,
  num,
  obj,
  oneOf,
  opt,
  str,
  tuple,
  union,
  unknown,
  unsafe,
  type Schema,
  type Static,
} from "@earendil-works/pi-schema";
