/**
 * A small builder for DynamoDB expressions: every attribute name goes through a `#` alias (many
 * of ours, like `status` and `session`, are reserved words) and every value through a `:`
 * placeholder, so conditions and updates read as plain code.
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb";

export class Expr {
  readonly #names: Record<string, string> = {};
  readonly #values: Record<string, AttributeValue> = {};
  readonly #set: string[] = [];
  readonly #remove: string[] = [];
  #next = 0;

  /** `#attr`, registered. */
  n(attr: string): string {
    const alias = `#${attr}`;
    this.#names[alias] = attr;
    return alias;
  }

  /** A fresh `:pN` placeholder for `value`. */
  v(value: AttributeValue): string {
    const placeholder = `:p${this.#next++}`;
    this.#values[placeholder] = value;
    return placeholder;
  }

  /** `SET attr = value`. */
  set(attr: string, value: AttributeValue): this {
    this.#set.push(`${this.n(attr)} = ${this.v(value)}`);
    return this;
  }

  /** `SET attr = value` for each attribute of `item`. */
  setItem(item: Record<string, AttributeValue>): this {
    for (const [attr, value] of Object.entries(item)) this.set(attr, value);
    return this;
  }

  /** A raw SET clause written with `n()` / `v()`. */
  setRaw(clause: string): this {
    this.#set.push(clause);
    return this;
  }

  /** `REMOVE attr`. */
  remove(...attrs: string[]): this {
    for (const attr of attrs) this.#remove.push(this.n(attr));
    return this;
  }

  /** The UpdateExpression of the SET / REMOVE clauses so far. */
  get update(): string {
    const parts: string[] = [];
    if (this.#set.length > 0) parts.push(`SET ${this.#set.join(", ")}`);
    if (this.#remove.length > 0) parts.push(`REMOVE ${this.#remove.join(", ")}`);
    return parts.join(" ");
  }

  /** Names and values, for the request (omitted when empty, as DynamoDB requires). */
  get attributes(): {
    ExpressionAttributeNames?: Record<string, string>;
    ExpressionAttributeValues?: Record<string, AttributeValue>;
  } {
    return {
      ...(Object.keys(this.#names).length > 0 ? { ExpressionAttributeNames: { ...this.#names } } : {}),
      ...(Object.keys(this.#values).length > 0 ? { ExpressionAttributeValues: { ...this.#values } } : {}),
    };
  }
}
