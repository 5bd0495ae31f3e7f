import { describe, expect, it } from "vitest";
import { ModelResolutionError, parseModelSpec, resolveModel } from "../../../src/agent/models.ts";

describe("resolveModel", () => {
  it("parses provider/model at the first slash", async () => {
    expect(parseModelSpec("openai/gpt-4o")).toEqual({ provider: "openai", modelId: "gpt-4o" });
    expect(parseModelSpec("Bedrock/us.anthropic.claude:0")).toEqual({ provider: "bedrock", modelId: "us.anthropic.claude:0" });
    expect(() => parseModelSpec("gpt-4o")).toThrow(ModelResolutionError);
    expect(() => parseModelSpec("openai/")).toThrow(/provider\/model/);
  });

  it("resolves an Anthropic model with a key", async () => {
    const { model, streamFn } = await resolveModel("anthropic/claude-sonnet-4-5", { ANTHROPIC_API_KEY: "k" });
    expect(model.provider).toBe("anthropic");
    expect(model.id).toBe("claude-sonnet-4-5");
    expect(model.api).toBe("anthropic-messages");
    expect(typeof streamFn).toBe("function");
  });

  it("resolves OpenAI, Gemini (alias of google) and Bedrock (alias)", async () => {
    expect((await resolveModel("openai/gpt-4o", { OPENAI_API_KEY: "k" })).model.provider).toBe("openai");
    expect((await resolveModel("gemini/gemini-2.5-flash", { GEMINI_API_KEY: "k" })).model.provider).toBe("google");
    const bedrock = await resolveModel("bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0", {
      AWS_ACCESS_KEY_ID: "a",
      AWS_SECRET_ACCESS_KEY: "s",
    });
    expect(bedrock.model.provider).toBe("amazon-bedrock");
    expect(bedrock.model.api).toBe("bedrock-converse-stream");
  });

  it("refuses a missing key, naming the variable", async () => {
    await expect(resolveModel("anthropic/claude-sonnet-4-5", {})).rejects.toThrow(/ANTHROPIC_API_KEY/);
    await expect(resolveModel("google/gemini-2.5-flash", { GEMINI_API_KEY: "" })).rejects.toThrow(/GEMINI_API_KEY/);
    await expect(resolveModel("bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0", { AWS_ACCESS_KEY_ID: "a" })).rejects.toThrow(
      /AWS credentials/,
    );
  });

  it("refuses unknown providers and models clearly", async () => {
    await expect(resolveModel("acme/x", {})).rejects.toThrow(/unknown model provider "acme"; supported: anthropic/);
    await expect(resolveModel("openai/no-such-model", { OPENAI_API_KEY: "k" })).rejects.toThrow(
      /unknown model "no-such-model" for provider "openai"; known models include: /,
    );
  });
});
