/**
 * The few DynamoDB attribute-value shapes the store writes (strings, numbers, booleans), and
 * typed readers for them. Payload-sized values are JSON strings, so no generic marshaller is
 * needed and numbers inside payloads never pass through DynamoDB's number type.
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb";

export type Item = Record<string, AttributeValue>;

export const S = (value: string): AttributeValue => ({ S: value });
export const N = (value: number): AttributeValue => ({ N: String(value) });
export const BOOL = (value: boolean): AttributeValue => ({ BOOL: value });

/** The string attribute `name`, or undefined. */
export function str(item: Item | undefined, name: string): string | undefined {
  return item?.[name]?.S;
}

/** The string attribute `name`; throws when absent (a malformed item is a bug, not a state). */
export function reqStr(item: Item, name: string): string {
  const value = item[name]?.S;
  if (value === undefined) throw new Error(`item ${describe(item)} lacks string attribute ${name}`);
  return value;
}

/** The number attribute `name`, or undefined. */
export function num(item: Item | undefined, name: string): number | undefined {
  const raw = item?.[name]?.N;
  return raw === undefined ? undefined : Number(raw);
}

/** The number attribute `name`; throws when absent. */
export function reqNum(item: Item, name: string): number {
  const value = num(item, name);
  if (value === undefined) throw new Error(`item ${describe(item)} lacks number attribute ${name}`);
  return value;
}

/** The boolean attribute `name`; absent reads as false. */
export function bool(item: Item | undefined, name: string): boolean {
  return item?.[name]?.BOOL === true;
}

/** Approximate stored size of an item in bytes (attribute names + values), for batching. */
export function itemBytes(item: Item): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(item)) {
    bytes += Buffer.byteLength(name);
    if (value.S !== undefined) bytes += Buffer.byteLength(value.S);
    else if (value.N !== undefined) bytes += 21;
    else if (value.B !== undefined) bytes += value.B.length;
    else bytes += 1;
  }
  return bytes;
}

function describe(item: Item): string {
  return `${item.pk?.S ?? "?"} / ${item.sk?.S ?? "?"}`;
}
