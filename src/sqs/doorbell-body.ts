import type { Doorbell } from "../ports/queue.ts";

/** A message body that is not a doorbell (a poison message: retrying cannot help). */
export class MalformedDoorbell extends Error {
  constructor(reason: string) {
    super(`malformed doorbell: ${reason}`);
    this.name = "MalformedDoorbell";
  }
}

/** The message body of a doorbell: its ids as JSON, nothing else (the store is the truth). */
export function encodeDoorbell(doorbell: Doorbell): string {
  return JSON.stringify({ submissionId: doorbell.submissionId, group: doorbell.group });
}

/** Parses a doorbell body; throws {@link MalformedDoorbell} when it is not one. */
export function decodeDoorbell(body: string): Doorbell {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    throw new MalformedDoorbell("body is not JSON");
  }
  // `sessionKey`: the group's name in bodies sent before it was renamed (still in flight after an upgrade).
  const v = value as (Partial<Doorbell> & { sessionKey?: unknown }) | null;
  if (v === null || typeof v !== "object") throw new MalformedDoorbell("body is not an object");
  if (typeof v.submissionId !== "string" || v.submissionId === "") throw new MalformedDoorbell("no submissionId");
  const group = v.group ?? v.sessionKey;
  if (typeof group !== "string" || group === "") throw new MalformedDoorbell("no group");
  return { submissionId: v.submissionId, group };
}
