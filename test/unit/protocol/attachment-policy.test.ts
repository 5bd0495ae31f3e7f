import { describe, expect, it } from "vitest";
import {
  attachmentProblem,
  checkAttachmentPolicy,
  declaredProblem,
  DEFAULT_ATTACHMENT_POLICY,
  normalizeMediaType,
  renderingOf,
} from "../../../src/protocol/attachment-policy.ts";
import { PNG_1x1 } from "../../support/attachment-fixtures.ts";

const bytes = (text: string) => Buffer.from(text, "latin1");

describe("attachment policy", () => {
  it("normalizes Content-Type values", () => {
    expect(normalizeMediaType("Text/Plain; Charset=\"UTF-8\"")).toEqual({ mediaType: "text/plain", charset: "utf-8" });
    expect(normalizeMediaType("image/png")).toEqual({ mediaType: "image/png" });
  });

  it("refuses unknown types naming the allowed ones, empty files and sizes over the type's limit", () => {
    expect(declaredProblem(DEFAULT_ATTACHMENT_POLICY, "image/svg+xml", 10)).toMatch(/^unsupported attachment type "image\/svg\+xml": allowed are image\/png, /);
    expect(declaredProblem(DEFAULT_ATTACHMENT_POLICY, "image/png", 0)).toMatch(/must not be empty/);
    expect(declaredProblem(DEFAULT_ATTACHMENT_POLICY, "image/png", 5 * 1024 * 1024 + 1)).toMatch(/exceeds its limit of 5242880 bytes/);
    expect(declaredProblem(DEFAULT_ATTACHMENT_POLICY, "image/png", 5 * 1024 * 1024)).toBeUndefined();
  });

  it("checks bytes against their declared type", () => {
    const policy = DEFAULT_ATTACHMENT_POLICY;
    expect(attachmentProblem(policy, "image/png", PNG_1x1)).toBeUndefined();
    expect(attachmentProblem(policy, "image/jpeg", PNG_1x1)).toMatch(/not a JPEG image/);
    expect(attachmentProblem(policy, "image/jpeg", Buffer.from([0xff, 0xd8, 0xff, 0xe0]))).toBeUndefined();
    expect(attachmentProblem(policy, "image/gif", bytes("GIF89a..."))).toBeUndefined();
    expect(attachmentProblem(policy, "image/webp", bytes("RIFF\0\0\0\0WEBPVP8 "))).toBeUndefined();
    expect(attachmentProblem(policy, "image/webp", bytes("RIFF\0\0\0\0WAVEfmt "))).toMatch(/not a WEBP image/);
    expect(attachmentProblem(policy, "application/pdf", bytes("%PDF-1.7\n"))).toBeUndefined();
    expect(attachmentProblem(policy, "application/pdf", bytes("<html>"))).toMatch(/not a PDF/);
    expect(attachmentProblem(policy, "text/csv", Buffer.from("a,b\n1,2"))).toBeUndefined();
    expect(attachmentProblem(policy, "application/json", Buffer.from([0xc3, 0x28]))).toMatch(/not valid UTF-8/);
    expect(attachmentProblem(policy, "text/plain", Buffer.from("x"), "iso-8859-1")).toMatch(/charset "iso-8859-1"/);
  });

  it("says how each type reaches the model", () => {
    expect(renderingOf("image/webp")).toBe("image");
    expect(renderingOf("text/markdown")).toBe("text");
    expect(renderingOf("application/json")).toBe("text");
    expect(renderingOf("application/pdf")).toBe("note");
  });

  it("checks a configured policy", () => {
    expect(checkAttachmentPolicy({ "image/png": 10 })).toEqual({ "image/png": 10 });
    expect(() => checkAttachmentPolicy({ "image/png": 0 })).toThrow(/positive integer/);
    expect(() => checkAttachmentPolicy({ png: 10 })).toThrow(/invalid media type "png"/);
    expect(() => checkAttachmentPolicy([])).toThrow(/must be an object/);
  });
});
