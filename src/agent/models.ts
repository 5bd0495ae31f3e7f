import type { StreamFn } from "@earendil-works/pi-agent-core";
import { createModels, defaultProviderAuthContext, type Api, type Model, type MutableModels } from "@earendil-works/pi-ai";

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

interface ProviderEntry {
  /** pi-ai's provider id. */
  id: string;
  /**
   * Loads the provider on demand: each pulls in its vendor SDK (hundreds of KB), and a process
   * that never calls a model (the HTTP and sweeper Lambdas) should not evaluate any of them.
   */
  load: () => Promise<Provider>;
  /** Any one of these present configures the provider (checked before any request). */
  credentials: readonly (readonly string[])[];
  /** How to say what is missing. */
  hint: string;
}

const PROVIDERS: Record<string, ProviderEntry> = {
  anthropic: {
    id: "anthropic",
    load: async () => (await import("@earendil-works/pi-ai/providers/anthropic")).anthropicProvider(),
    credentials: [["ANTHROPIC_API_KEY"], ["ANTHROPIC_AUTH_TOKEN"], ["ANTHROPIC_OAUTH_TOKEN"]],
    hint: "set ANTHROPIC_API_KEY",
  },
  openai: {
    id: "openai",
    load: async () => (await import("@earendil-works/pi-ai/providers/openai")).openaiProvider(),
    credentials: [["OPENAI_API_KEY"]],
    hint: "set OPENAI_API_KEY",
  },
  google: {
    id: "google",
    load: async () => (await import("@earendil-works/pi-ai/providers/google")).googleProvider(),
    credentials: [["GEMINI_API_KEY"]],
    hint: "set GEMINI_API_KEY",
  },
  "amazon-bedrock": {
    id: "amazon-bedrock",
    load: async () => {
      // Registering the lazy Bedrock module lets bundlers follow its import (notes: bundling pitfall).
      (await import("@earendil-works/pi-ai/lazy-bedrock-provider")).registerLazyBedrockProvider();
      return (await import("@earendil-works/pi-ai/providers/amazon-bedrock")).amazonBedrockProvider();
    },
    // The same ambient sources pi-ai's Bedrock auth accepts (a Lambda role sets the access keys).
    credentials: [
      ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"],
      ["AWS_PROFILE"],
      ["AWS_BEARER_TOKEN_BEDROCK"],
      ["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"],
      ["AWS_CONTAINER_CREDENTIALS_FULL_URI"],
      ["AWS_WEB_IDENTITY_TOKEN_FILE"],
    ],
    hint: "provide AWS credentials (AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY, AWS_PROFILE, a role, or AWS_BEARER_TOKEN_BEDROCK)",
  },
};

const ALIASES: Record<string, string> = { gemini: "google", bedrock: "amazon-bedrock" };

/** Provider names `resolveModel` accepts (aliases included). */
export const SUPPORTED_PROVIDERS: readonly string[] = [...Object.keys(PROVIDERS), ...Object.keys(ALIASES)];

/** Splits `"provider/model"` at the first slash (model ids may contain `/`, `.` and `:`). */
export function parseModelSpec(spec: string): { provider: string; modelId: string } {
  const slash = spec.indexOf("/");
  if (slash <= 0 || slash === spec.length - 1) {
    throw new ModelResolutionError(`model must be "provider/model" (e.g. "anthropic/claude-sonnet-4-5"), got "${spec}"`);
  }
  return { provider: spec.slice(0, slash).trim().toLowerCase(), modelId: spec.slice(slash + 1).trim() };
}

function providerEntry(name: string): ProviderEntry {
  const entry = PROVIDERS[ALIASES[name] ?? name];
  if (entry === undefined) {
    throw new ModelResolutionError(`unknown model provider "${name}"; supported: ${SUPPORTED_PROVIDERS.join(", ")}`);
  }
  return entry;
}

/** A `Models` collection whose credentials come from `env` only. */
async function modelsFor(entry: ProviderEntry, env: ProviderEnvironment): Promise<MutableModels> {
  const ambient = defaultProviderAuthContext();
  const models = createModels({
    authContext: { env: async (name) => env[name] || undefined, fileExists: (path) => ambient.fileExists(path) },
  });
  models.setProvider(await entry.load());
  return models;
}

/**
 * Resolves `"provider/model"` (providers: anthropic, openai, google or gemini, amazon-bedrock or
 * bedrock) to a pi model and a stream function calling it, with credentials read from `env`.
 * Rejects with {@link ModelResolutionError} for a malformed spec, an unknown provider or model,
 * or missing credentials, before any network request. Only the named provider's SDK is loaded.
 */
export async function resolveModel(
  spec: string,
  env: ProviderEnvironment,
): Promise<{ model: Model<Api>; streamFn: StreamFn }> {
  const { provider, modelId } = parseModelSpec(spec);
  const entry = providerEntry(provider);
  const configured = entry.credentials.some((set) => set.every((name) => (env[name] ?? "") !== ""));
  if (!configured) throw new ModelResolutionError(`provider "${entry.id}" is not configured: ${entry.hint}`);
  const models = await modelsFor(entry, env);
  const model = models.getModel(entry.id, modelId);
  if (model === undefined) {
    const known = models.getModels(entry.id).map((m) => m.id);
    const sample = known.slice(0, 12).join(", ");
    throw new ModelResolutionError(
      `unknown model "${modelId}" for provider "${entry.id}"` +
        (known.length > 0 ? `; known models include: ${sample}${known.length > 12 ? ", ..." : ""}` : ""),
    );
  }
  const streamFn: StreamFn = (m, context, options) => models.streamSimple(m, context, options);
  return { model, streamFn };
}
