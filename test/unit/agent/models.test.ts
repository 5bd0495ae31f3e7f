import { describe, expect, it } from "vitest";
import { ModelResolutionError, parseModelSpec, providerVariables, resolveModel, SUPPORTED_PROVIDERS } from "../../../src/agent/models.ts";

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
    await expect(resolveModel("anthropic/claude-sonnet-4-5", {})).rejects.toThrow('provider "anthropic" is not configured: set ANTHROPIC_API_KEY');
    await expect(resolveModel("google/gemini-2.5-flash", { GEMINI_API_KEY: "" })).rejects.toThrow(/GEMINI_API_KEY/);
    await expect(resolveModel("bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0", { AWS_ACCESS_KEY_ID: "a" })).rejects.toThrow(
      /AWS credentials/,
    );
  });

  it("refuses unknown providers and models clearly", async () => {
    await expect(resolveModel("acme/x", {})).rejects.toThrow(/unknown model provider "acme"; supported: .*\banthropic\b.*\bopenai-compatible\b/);
    await expect(resolveModel("openai/no-such-model", { OPENAI_API_KEY: "k" })).rejects.toThrow(
      /unknown model "no-such-model" for provider "openai"; known models include: /,
    );
  });

  it("reaches every provider pi-ai ships, each configured by the variables pi-ai's auth reads (issue 37)", async () => {
    expect(SUPPORTED_PROVIDERS.length).toBeGreaterThan(40);
    for (const name of ["openrouter", "groq", "mistral", "xai", "deepseek", "together", "fireworks", "azure", "google-vertex", "cloudflare-workers-ai"]) {
      expect(SUPPORTED_PROVIDERS, name).toContain(name);
    }
    const cases: [string, Record<string, string>, string][] = [
      ["groq/llama-3.3-70b-versatile", { GROQ_API_KEY: "k" }, "openai-completions"],
      ["openrouter/~anthropic/claude-haiku-latest", { OPENROUTER_API_KEY: "k" }, ""],
      ["mistral/codestral-latest", { MISTRAL_API_KEY: "k" }, "mistral-conversations"],
      ["xai/grok-4.3", { XAI_API_KEY: "k" }, ""],
      ["deepseek/deepseek-flash", { DEEPSEEK_API_KEY: "k" }, ""],
      ["cloudflare-workers-ai/@cf/deepseek-ai/deepseek-v4-flash-0731", { CLOUDFLARE_API_KEY: "k", CLOUDFLARE_ACCOUNT_ID: "a" }, ""],
    ];
    for (const [spec, env, api] of cases) {
      const { model } = await resolveModel(spec, env);
      expect(`${model.provider}/${model.id}`).toBe(spec);
      if (api) expect(model.api, spec).toBe(api);
    }
    // A missing key names the variable pi-ai reads.
    await expect(resolveModel("groq/llama-3.3-70b-versatile", {})).rejects.toThrow('provider "groq" is not configured: set GROQ_API_KEY');
    await expect(resolveModel("openrouter/~anthropic/claude-haiku-latest", { OPENROUTER_API_KEY: "" })).rejects.toThrow(/set OPENROUTER_API_KEY/);
    await expect(resolveModel("cloudflare-workers-ai/@cf/deepseek-ai/deepseek-v4-flash-0731", { CLOUDFLARE_API_KEY: "k" })).rejects.toThrow(
      /CLOUDFLARE_ACCOUNT_ID/,
    );
    expect(await providerVariables("qwen-token-plan")).toEqual(["QWEN_TOKEN_PLAN_TEAM_API_KEY", "QWEN_TOKEN_PLAN_API_KEY"]);
  });

  it("openai-compatible/<model>: any model id at OPENAI_COMPATIBLE_BASE_URL, the key optional; no base URL names the variable", async () => {
    const { model } = await resolveModel("openai-compatible/llama3.2:3b", { OPENAI_COMPATIBLE_BASE_URL: "http://127.0.0.1:11434/v1/" });
    expect(model).toMatchObject({ provider: "openai-compatible", id: "llama3.2:3b", api: "openai-completions", baseUrl: "http://127.0.0.1:11434/v1" });
    await expect(resolveModel("openai-compatible/llama3.2", {})).rejects.toThrow(
      'provider "openai-compatible" is not configured: set OPENAI_COMPATIBLE_BASE_URL',
    );
    await expect(resolveModel("openai-compatible/llama3.2", { OPENAI_COMPATIBLE_BASE_URL: "localhost:11434" })).rejects.toThrow(
      /OPENAI_COMPATIBLE_BASE_URL must be an http\(s\) URL/,
    );
  });
});
