import type { Doorbell } from "../../ports/queue.ts";

/** A message body that is not a doorbell (a poison message: retrying cannot help). */
export class MalformedDoorbell extends Error {
  constructor(reason: string) {
    super(`malformed doorbell: ${reason}`);
    this.name = "MalformedDoorbell";
  }
}

/** The message body of a doorbell: its ids as JSON, nothing else (the store is the truth). */
export function encodeDoorbell(doorbell: Doorbell): string {
  return JSON.stringify({ submissionId: doorbell.submissionId, sessionKey: doorbell.sessionKey });
}

/** Parses a doorbell body; throws {@link MalformedDoorbell} when it is not one. */
export function decodeDoorbell(body: string): Doorbell {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    throw new MalformedDoorbell("body is not JSON");
  }
  const v = value as Partial<Doorbell> | null;
  if (v === null || typeof v !== "object") throw new MalformedDoorbell("body is not an object");
  if (typeof v.submissionId !== "string" || v.submissionId === "") throw new MalformedDoorbell("no submissionId");
  if (typeof v.sessionKey !== "string" || v.sessionKey === "") throw new MalformedDoorbell("no sessionKey");
  return { submissionId: v.submissionId, sessionKey: v.sessionKey };
}
