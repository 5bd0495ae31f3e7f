/**
 * A DynamoDB client whose sends a test can stop at: held until the test releases them (to force
 * an interleaving between two store instances), or never sent at all (the process died there:
 * nothing after that point runs, as after a kill).
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { createDynamoClient } from "../../src/dynamodb/index.ts";

/** Picks a send by its command name and input. */
export type SendMatch = (command: string, input: Record<string, unknown>) => boolean;

export const transaction: SendMatch = (command) => command === "TransactWriteItemsCommand";
export const reservation: SendMatch = (command, input) => command === "UpdateItemCommand" && skOf(input.Key) === "SESSION";
export const sessionRead: SendMatch = (command, input) => command === "GetItemCommand" && skOf(input.Key) === "SESSION";

function skOf(key: unknown): string | undefined {
  return (key as { sk?: { S?: string } } | undefined)?.sk?.S;
}

export interface HeldSends {
  dynamo: DynamoDBClient;
  /** The next send `match` finds waits until `release()`; `reached` resolves when it got there. */
  hold(match: SendMatch): { reached: Promise<void>; release(): void };
  /** The next send `match` finds never goes (the process died there); resolves when it got there. */
  die(match: SendMatch): Promise<void>;
}

export function heldSendsClient(): HeldSends {
  const dynamo = createDynamoClient({}, { baseDelayMs: 5, throttlingBaseDelayMs: 10 });
  const rules: { match: SendMatch; reached: () => void; gate: Promise<void> }[] = [];
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const i = rules.findIndex((r) => r.match(context.commandName ?? "", args.input as Record<string, unknown>));
      if (i >= 0) {
        const [rule] = rules.splice(i, 1);
        rule!.reached();
        await rule!.gate;
      }
      return next(args);
    },
    { step: "initialize", name: "heldSends" },
  );
  const hold = (match: SendMatch) => {
    let reached!: () => void;
    let release!: () => void;
    const at = new Promise<void>((r) => (reached = r));
    rules.push({ match, reached, gate: new Promise<void>((r) => (release = r)) });
    return { reached: at, release };
  };
  return { dynamo, hold, die: (match) => hold(match).reached };
}
