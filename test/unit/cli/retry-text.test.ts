import { describe, expect, it } from "vitest";
import { retryReasonText, retryTimeText } from "../../../src/cli/retry-text.ts";

describe("retry text (ADR 0053)", () => {
  it("says each reason in words, with the provider's status when it answered", () => {
    expect(retryReasonText({ reason: "unreachable" })).toBe("the model provider is unreachable");
    expect(retryReasonText({ reason: "rate_limited", status: 429 })).toBe("the model provider is rate limiting (HTTP 429)");
    expect(retryReasonText({ reason: "overloaded", status: 529 })).toBe("the model provider is overloaded (HTTP 529)");
    expect(retryReasonText({ reason: "unavailable", status: 503 })).toBe("the model provider is unavailable (HTTP 503)");
    expect(retryReasonText({ reason: "transient", status: 500 })).toBe("the last try failed (HTTP 500)");
    // A reason a newer server sends, escaped as any server text.
    expect(retryReasonText({ reason: "\u001b[2Jnew" as never })).toBe("\\x1b[2Jnew");
  });

  it("prints epoch ms and RFC 3339 times alike, to the second", () => {
    expect(retryTimeText(Date.UTC(2026, 0, 1, 12, 0, 30, 250))).toBe("2026-01-01T12:00:30Z");
    expect(retryTimeText("2026-01-01T12:00:30.250Z")).toBe("2026-01-01T12:00:30Z");
    expect(retryTimeText("soon")).toBe("soon");
  });
});
