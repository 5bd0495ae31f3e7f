/**
 * The presigned POST's signature (ADR 0034) is SigV4's: computed here with node:crypto, checked
 * against AWS's own signer (`@smithy/signature-v4`, dev only) signing the same policy string.
 */
import { createHash } from "node:crypto";
import { SignatureV4 } from "@smithy/signature-v4";
import { describe, expect, it } from "vitest";
import { postPolicySignature } from "../../../src/dynamodb/direct-uploads.ts";

class Sha256 {
  readonly #secret: Uint8Array | undefined;
  #chunks: Uint8Array[] = [];
  constructor(secret?: Uint8Array | ArrayBuffer | ArrayBufferView | string) {
    this.#secret = secret === undefined ? undefined : bytes(secret);
  }
  update(data: Uint8Array | ArrayBuffer | ArrayBufferView | string) {
    this.#chunks.push(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    const { createHmac } = await import("node:crypto");
    const h = this.#secret ? createHmac("sha256", this.#secret) : createHash("sha256");
    for (const c of this.#chunks) h.update(c);
    return new Uint8Array(h.digest());
  }
  reset() {
    this.#chunks = [];
  }
}

function bytes(data: Uint8Array | ArrayBuffer | ArrayBufferView | string): Uint8Array {
  if (typeof data === "string") return Buffer.from(data);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

describe("postPolicySignature", () => {
  it("equals the SDK signer's signature of the same policy", async () => {
    const credentials = { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY" };
    const policy = Buffer.from(JSON.stringify({ expiration: "2026-12-02T09:00:00.000Z", conditions: [{ bucket: "b" }] })).toString("base64");
    const signer = new SignatureV4({ credentials, region: "eu-west-1", service: "s3", sha256: Sha256 });
    const expected = await signer.sign(policy, { signingDate: new Date("2026-12-02T08:45:00Z") });
    expect(postPolicySignature(credentials.secretAccessKey, "20261202", "eu-west-1", policy)).toBe(expected);
  });
});
