import type { StreamFn } from "@earendil-works/pi-agent-core";
import {
  createModels,
  createProvider,
  defaultProviderAuthContext,
  type Api,
  type AuthContext,
  type Model,
  type MutableModels,
} from "@earendil-works/pi-ai";

/** A pi-ai provider, as `Models.setProvider` takes it. */
type Provider = Parameters<MutableModels["setProvider"]>[0];

/** Environment to read provider credentials from (e.g. `process.env`). */
export type ProviderEnvironment = Readonly<Record<string, string | undefined>>;

/** A model spec could not be resolved: unknown provider or model, or no credentials. */
export class ModelResolutionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ModelResolutionError";
  }
}

/**
 * Every provider pi-ai ships, by its id, each loaded on demand: a provider pulls in its catalog
 * and, on its first request, its vendor SDK, and a process that never calls a model (the HTTP and
 * sweeper Lambdas) should evaluate none of them. The imports are literal so bundlers follow each
 * one into a chunk of its own. Left out: `openai-codex` (a ChatGPT subscription's OAuth login, no
 * variable configures it) and pi-ai's test provider `faux`. Which variables configure each, and
 * whether they are set, is pi-ai's own auth code's answer (see {@link providerVariables}).
 */
const PROVIDERS: Record<string, () => Promise<Provider>> = {
  "amazon-bedrock": async () => {
    // Registering the lazy Bedrock module lets bundlers follow its import (notes: bundling pitfall).
    (await import("@earendil-works/pi-ai/lazy-bedrock-provider")).registerLazyBedrockProvider();
    return (await import("@earendil-works/pi-ai/providers/amazon-bedrock")).amazonBedrockProvider();
  },
  "ant-ling": async () => (await import("@earendil-works/pi-ai/providers/ant-ling")).antLingProvider(),
  anthropic: async () => (await import("@earendil-works/pi-ai/providers/anthropic")).anthropicProvider(),
  azure: async () => (await import("@earendil-works/pi-ai/providers/azure")).azureProvider(),
  baseten: async () => (await import("@earendil-works/pi-ai/providers/baseten")).basetenProvider(),
  cerebras: async () => (await import("@earendil-works/pi-ai/providers/cerebras")).cerebrasProvider(),
  "cloudflare-ai-gateway": async () => (await import("@earendil-works/pi-ai/providers/cloudflare-ai-gateway")).cloudflareAIGatewayProvider(),
  "cloudflare-workers-ai": async () => (await import("@earendil-works/pi-ai/providers/cloudflare-workers-ai")).cloudflareWorkersAIProvider(),
  deepseek: async () => (await import("@earendil-works/pi-ai/providers/deepseek")).deepseekProvider(),
  fireworks: async () => (await import("@earendil-works/pi-ai/providers/fireworks")).fireworksProvider(),
  "github-copilot": async () => (await import("@earendil-works/pi-ai/providers/github-copilot")).githubCopilotProvider(),
  google: async () => (await import("@earendil-works/pi-ai/providers/google")).googleProvider(),
  "google-vertex": async () => (await import("@earendil-works/pi-ai/providers/google-vertex")).googleVertexProvider(),
  groq: async () => (await import("@earendil-works/pi-ai/providers/groq")).groqProvider(),
  huggingface: async () => (await import("@earendil-works/pi-ai/providers/huggingface")).huggingfaceProvider(),
  "kimi-coding": async () => (await import("@earendil-works/pi-ai/providers/kimi-coding")).kimiCodingProvider(),
  meta: async () => (await import("@earendil-works/pi-ai/providers/meta")).metaProvider(),
  minimax: async () => (await import("@earendil-works/pi-ai/providers/minimax")).minimaxProvider(),
  "minimax-cn": async () => (await import("@earendil-works/pi-ai/providers/minimax-cn")).minimaxCnProvider(),
  mistral: async () => (await import("@earendil-works/pi-ai/providers/mistral")).mistralProvider(),
  moonshotai: async () => (await import("@earendil-works/pi-ai/providers/moonshotai")).moonshotaiProvider(),
  "moonshotai-cn": async () => (await import("@earendil-works/pi-ai/providers/moonshotai-cn")).moonshotaiCnProvider(),
  nvidia: async () => (await import("@earendil-works/pi-ai/providers/nvidia")).nvidiaProvider(),
  openai: async () => (await import("@earendil-works/pi-ai/providers/openai")).openaiProvider(),
  opencode: async () => (await import("@earendil-works/pi-ai/providers/opencode")).opencodeProvider(),
  "opencode-go": async () => (await import("@earendil-works/pi-ai/providers/opencode-go")).opencodeGoProvider(),
  openrouter: async () => (await import("@earendil-works/pi-ai/providers/openrouter")).openrouterProvider(),
  "qwen-token-plan": async () => (await import("@earendil-works/pi-ai/providers/qwen-token-plan")).qwenTokenPlanProvider(),
  "qwen-token-plan-cn": async () => (await import("@earendil-works/pi-ai/providers/qwen-token-plan-cn")).qwenTokenPlanCnProvider(),
  "qwen-token-plan-individual": async () =>
    (await import("@earendil-works/pi-ai/providers/qwen-token-plan-individual")).qwenTokenPlanIndividualProvider(),
  "qwen-token-plan-individual-cn": async () =>
    (await import("@earendil-works/pi-ai/providers/qwen-token-plan-individual-cn")).qwenTokenPlanIndividualCnProvider(),
  radius: async () => (await import("@earendil-works/pi-ai/providers/radius")).radiusProvider(),
  together: async () => (await import("@earendil-works/pi-ai/providers/together")).togetherProvider(),
  typesafe: async () => (await import("@earendil-works/pi-ai/providers/typesafe")).typesafeProvider(),
  "vercel-ai-gateway": async () => (await import("@earendil-works/pi-ai/providers/vercel-ai-gateway")).vercelAIGatewayProvider(),
  xai: async () => (await import("@earendil-works/pi-ai/providers/xai")).xaiProvider(),
  xiaomi: async () => (await import("@earendil-works/pi-ai/providers/xiaomi")).xiaomiProvider(),
  "xiaomi-token-plan-ams": async () => (await import("@earendil-works/pi-ai/providers/xiaomi-token-plan-ams")).xiaomiTokenPlanAmsProvider(),
  "xiaomi-token-plan-cn": async () => (await import("@earendil-works/pi-ai/providers/xiaomi-token-plan-cn")).xiaomiTokenPlanCnProvider(),
  "xiaomi-token-plan-sgp": async () => (await import("@earendil-works/pi-ai/providers/xiaomi-token-plan-sgp")).xiaomiTokenPlanSgpProvider(),
  zai: async () => (await import("@earendil-works/pi-ai/providers/zai")).zaiProvider(),
  "zai-coding-cn": async () => (await import("@earendil-works/pi-ai/providers/zai-coding-cn")).zaiCodingCnProvider(),
};

/** The provider name of any server speaking OpenAI's chat-completions API (Ollama, vLLM, LM Studio, LiteLLM). */
export const OPENAI_COMPATIBLE = "openai-compatible";
/** Where the OpenAI-compatible server is (its API root, e.g. `http://127.0.0.1:11434/v1`); required. */
export const OPENAI_COMPATIBLE_BASE_URL = "OPENAI_COMPATIBLE_BASE_URL";
/** The key it wants as `Authorization: Bearer`; optional (local servers take none). */
export const OPENAI_COMPATIBLE_API_KEY = "OPENAI_COMPATIBLE_API_KEY";

const ALIASES: Record<string, string> = { gemini: "google", bedrock: "amazon-bedrock" };

/** How to say what is missing where pi-ai's variables alone would not say it. */
const HINTS: Record<string, string> = {
  anthropic: "set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, ANTHROPIC_OAUTH_TOKEN)",
  "amazon-bedrock": "provide AWS credentials (AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY, AWS_PROFILE, a role, or AWS_BEARER_TOKEN_BEDROCK)",
  "google-vertex":
    "set GOOGLE_CLOUD_API_KEY, or Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS or gcloud's) with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION",
  "cloudflare-workers-ai": "set CLOUDFLARE_API_KEY and CLOUDFLARE_ACCOUNT_ID",
  "cloudflare-ai-gateway": "set CLOUDFLARE_API_KEY, CLOUDFLARE_ACCOUNT_ID and CLOUDFLARE_GATEWAY_ID",
};

/** Provider names `resolveModel` accepts: every pi-ai provider, the aliases, and `openai-compatible`. */
export const SUPPORTED_PROVIDERS: readonly string[] = [...Object.keys(PROVIDERS), ...Object.keys(ALIASES), OPENAI_COMPATIBLE];

/** Splits `"provider/model"` at the first slash (model ids may contain `/`, `.` and `:`). */
export function parseModelSpec(spec: string): { provider: string; modelId: string } {
  const slash = spec.indexOf("/");
  if (slash <= 0 || slash === spec.length - 1) {
    throw new ModelResolutionError(`model must be "provider/model" (e.g. "anthropic/claude-sonnet-4-5"), got "${spec}"`);
  }
  return { provider: spec.slice(0, slash).trim().toLowerCase(), modelId: spec.slice(slash + 1).trim() };
}

function providerId(name: string): string {
  const id = ALIASES[name] ?? name;
  if (PROVIDERS[id] === undefined && id !== OPENAI_COMPATIBLE) {
    throw new ModelResolutionError(`unknown model provider "${name}"; supported: ${SUPPORTED_PROVIDERS.join(", ")}`);
  }
  return id;
}

/** Credentials from `env` only (an empty value is unset), files as the machine has them. */
function authContext(env: ProviderEnvironment): AuthContext {
  const ambient = defaultProviderAuthContext();
  return { env: async (name) => env[name] || undefined, fileExists: (path) => ambient.fileExists(path) };
}

/**
 * The variables a provider's credentials come from, as pi-ai's own auth code reads them: its
 * resolution is run against an environment where nothing is set, and every name it asks for is
 * noted, in order. (Used for the message naming what is missing, and by the test that keeps the
 * configuration reference listing every provider's variables.)
 */
export async function providerVariables(name: string): Promise<string[]> {
  const id = providerId(name);
  if (id === OPENAI_COMPATIBLE) return [OPENAI_COMPATIBLE_BASE_URL, OPENAI_COMPATIBLE_API_KEY];
  const provider = await PROVIDERS[id]!();
  const asked: string[] = [];
  const ctx: AuthContext = {
    env: async (variable) => {
      if (!asked.includes(variable)) asked.push(variable);
      return undefined;
    },
    fileExists: async () => false,
  };
  await provider.auth.apiKey?.resolve({ ctx, signal: new AbortController().signal }).catch(() => undefined);
  return asked;
}

/**
 * Resolves `"provider/model"` to a pi model and a stream function calling it, with credentials
 * read from `env`. Providers: every one pi-ai ships (`anthropic`, `openai`, `google` or `gemini`,
 * `amazon-bedrock` or `bedrock`, `openrouter`, `groq`, `mistral`, `xai`, `deepseek`, `together`,
 * `fireworks`, `azure`, `google-vertex`, `cloudflare-workers-ai`, … : {@link SUPPORTED_PROVIDERS}),
 * and `openai-compatible/<model>`, any server speaking OpenAI's chat completions at
 * `OPENAI_COMPATIBLE_BASE_URL` (with `OPENAI_COMPATIBLE_API_KEY` when it wants one).
 * Rejects with {@link ModelResolutionError} for a malformed spec, an unknown provider or model,
 * or missing credentials (naming the variables), before any network request. Only the named
 * provider is loaded.
 */
export async function resolveModel(
  spec: string,
  env: ProviderEnvironment,
): Promise<{ model: Model<Api>; streamFn: StreamFn }> {
  const { provider: name, modelId } = parseModelSpec(spec);
  const id = providerId(name);
  const models = createModels({ authContext: authContext(env) });
  if (id === OPENAI_COMPATIBLE) return await openAICompatibleModel(models, modelId, env);
  models.setProvider(await PROVIDERS[id]!());
  // pi-ai's own answer to "is it configured?" (its auth reads `env` through the context above).
  if ((await models.getAuth(id).catch(() => undefined)) === undefined) {
    const variables = await providerVariables(id);
    const hint = HINTS[id] ?? (variables.length === 1 ? `set ${variables[0]}` : `set ${variables.join(" or ")}`);
    throw new ModelResolutionError(`provider "${id}" is not configured: ${hint}`);
  }
  const model = models.getModel(id, modelId);
  if (model === undefined) {
    const known = models.getModels(id).map((m) => m.id);
    const sample = known.slice(0, 12).join(", ");
    throw new ModelResolutionError(
      `unknown model "${modelId}" for provider "${id}"` + (known.length > 0 ? `; known models include: ${sample}${known.length > 12 ? ", ..." : ""}` : ""),
    );
  }
  const streamFn: StreamFn = (m, context, options) => models.streamSimple(m, context, options);
  return { model, streamFn };
}

/**
 * A model of an OpenAI-compatible server: any model id (the server knows its models, pi-ai's
 * catalog does not), through pi-ai's chat-completions client with the settings every such server
 * accepts (the `system` role, `max_tokens`, no `store` or reasoning effort).
 */
async function openAICompatibleModel(models: MutableModels, modelId: string, env: ProviderEnvironment): Promise<{ model: Model<Api>; streamFn: StreamFn }> {
  const raw = env[OPENAI_COMPATIBLE_BASE_URL] ?? "";
  if (raw === "") {
    throw new ModelResolutionError(
      `provider "${OPENAI_COMPATIBLE}" is not configured: set ${OPENAI_COMPATIBLE_BASE_URL} to the server's API root (e.g. http://127.0.0.1:11434/v1 for Ollama)`,
    );
  }
  let baseUrl: string;
  try {
    const url = new URL(raw);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("not http(s)");
    baseUrl = url.href.replace(/\/+$/, "");
  } catch {
    throw new ModelResolutionError(`${OPENAI_COMPATIBLE_BASE_URL} must be an http(s) URL such as http://127.0.0.1:11434/v1, got ${JSON.stringify(raw)}`);
  }
  const { openAICompletionsApi } = await import("@earendil-works/pi-ai/api/openai-completions.lazy");
  const model: Model<"openai-completions"> = {
    id: modelId,
    name: modelId,
    api: "openai-completions",
    provider: OPENAI_COMPATIBLE,
    baseUrl,
    reasoning: false,
    input: ["text"],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 128_000,
    maxTokens: 8_192,
    compat: { supportsStore: false, supportsDeveloperRole: false, supportsReasoningEffort: false, maxTokensField: "max_tokens" },
  };
  models.setProvider(
    createProvider({
      id: OPENAI_COMPATIBLE,
      name: "OpenAI-compatible server",
      baseUrl,
      auth: {
        apiKey: {
          name: "OpenAI-compatible server key",
          // The client always sends a bearer token; a server that wants none ignores this one.
          resolve: async ({ ctx }) => {
            const key = await ctx.env(OPENAI_COMPATIBLE_API_KEY);
            return { auth: { apiKey: key ?? "none" }, source: key ? OPENAI_COMPATIBLE_API_KEY : "none needed" };
          },
        },
      },
      models: [model],
      api: openAICompletionsApi(),
    }),
  );
  const streamFn: StreamFn = (m, context, options) => models.streamSimple(m, context, options);
  return { model: model as Model<Api>, streamFn };
}
