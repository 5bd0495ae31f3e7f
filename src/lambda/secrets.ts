/**
 * Secrets by reference (DESIGN §3.1, docs/adr/0027): the `Harness` construct's `secrets` prop puts
 * into a function's configuration only where each secret lives (`HARNESS_SECRETS`); this module
 * reads them from Secrets Manager or SSM Parameter Store (SecureString, decrypted) once per
 * container, at cold start, and sets them as the process's environment variables, where provider
 * SDKs, agents' `env()` and the handlers' settings (`HARNESS_BEARER_TOKEN`) read them. The values
 * never appear in the template, `GetFunctionConfiguration` or the logs.
 *
 * The two calls are signed with `aws4fetch` (already the client's SigV4 library) with the
 * function's credentials from its environment, so no AWS SDK client is bundled for them.
 */
import { HARNESS_ENV } from "./env.ts";
import { looksLikeSecret } from "./secret-like.ts";

/** Where one secret lives, as the construct writes it into `HARNESS_SECRETS`. */
export type SecretReference =
  /** A Secrets Manager secret (ARN or name), its whole string or one JSON field of it. */
  | { secretsManager: string; field?: string }
  /** An SSM parameter (a SecureString is decrypted). */
  | { ssm: string };

/** Names of environment variables a secret may be set as (the construct checks them too). */
export const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `HARNESS_SECRETS` is not a valid list of references (a deployment error, not a caller's). */
export class SecretReferencesInvalid extends Error {
  readonly code = "secret_references_invalid";
  constructor(message: string) {
    super(message);
    this.name = "SecretReferencesInvalid";
  }
}

/** A secret could not be read at cold start; the message names the variable, never a value. */
export class SecretUnreadable extends Error {
  readonly code = "secret_unreadable";
  /** The environment variable the secret was to be set as. */
  readonly secretName: string;
  constructor(secretName: string, why: string) {
    super(`secret ${secretName}: ${why}`);
    this.name = "SecretUnreadable";
    this.secretName = secretName;
  }
}

/**
 * Names of `env`'s variables that look like secrets ({@link looksLikeSecret}) but came as plain
 * environment: not among `HARNESS_SECRETS`' references (nor that list of references itself), and not
 * set by Lambda itself (`AWS_*`).
 */
export function plainSecretLikeNames(env: NodeJS.ProcessEnv = process.env): string[] {
  let references: Record<string, SecretReference> = {};
  try {
    references = secretReferences(env);
  } catch {
    // the load reports it
  }
  return Object.keys(env)
    .filter((name) => name !== HARNESS_ENV.secrets && looksLikeSecret(name, env[name]) && !name.startsWith("AWS_") && !(name in references))
    .sort();
}

/** The references in `HARNESS_SECRETS` (a JSON object of name → reference), checked. */
export function secretReferences(env: NodeJS.ProcessEnv = process.env): Record<string, SecretReference> {
  const raw = env[HARNESS_ENV.secrets];
  if (raw === undefined || raw === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = undefined;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new SecretReferencesInvalid(`${HARNESS_ENV.secrets} must be a JSON object of name → {secretsManager, field?} or {ssm}`);
  }
  for (const [name, ref] of Object.entries(parsed as Record<string, unknown>)) {
    const r = ref as Record<string, unknown> | null;
    const ok =
      SECRET_NAME.test(name) &&
      r !== null &&
      typeof r === "object" &&
      ((typeof r.secretsManager === "string" && r.secretsManager !== "" && (r.field === undefined || typeof r.field === "string")) ||
        (typeof r.ssm === "string" && r.ssm !== ""));
    if (!ok) throw new SecretReferencesInvalid(`${HARNESS_ENV.secrets}: ${JSON.stringify(name)} is not a valid secret reference`);
  }
  return parsed as Record<string, SecretReference>;
}

// One load per environment (per container: the handlers use `process.env`).
const loads = new WeakMap<NodeJS.ProcessEnv, Promise<void>>();

/**
 * Resolves every reference of `HARNESS_SECRETS` into `process.env`, once per container (later
 * calls reuse the first's result; a failed load is retried by the next call). Nothing to do, and
 * nothing loaded, without the variable.
 * @throws SecretUnreadable naming the variable and the service's error when a secret cannot be read
 * @throws SecretReferencesInvalid when `HARNESS_SECRETS` does not parse
 */
export function loadSecrets(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (!env[HARNESS_ENV.secrets]) return Promise.resolve();
  let load = loads.get(env);
  if (!load) {
    load = resolveInto(env).catch((err: unknown) => {
      loads.delete(env);
      throw err;
    });
    loads.set(env, load);
  }
  return load;
}

async function resolveInto(env: NodeJS.ProcessEnv): Promise<void> {
  const references = secretReferences(env);
  const values = await Promise.all(Object.entries(references).map(async ([name, ref]) => [name, await readSecret(name, ref, env)] as const));
  for (const [name, value] of values) env[name] = value;
}

/** Reads one secret's value. */
export async function readSecret(name: string, ref: SecretReference, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if ("ssm" in ref) {
    const answer = (await call(env, "ssm", "AmazonSSM.GetParameter", { Name: ref.ssm, WithDecryption: true }, name)) as {
      Parameter?: { Value?: string };
    };
    const value = answer.Parameter?.Value;
    if (typeof value !== "string") throw new SecretUnreadable(name, `parameter ${ref.ssm} has no value`);
    return value;
  }
  const answer = (await call(env, "secretsmanager", "secretsmanager.GetSecretValue", { SecretId: ref.secretsManager }, name)) as {
    SecretString?: string;
  };
  const text = answer.SecretString;
  if (typeof text !== "string") throw new SecretUnreadable(name, `${ref.secretsManager} has no SecretString (binary secrets are not supported)`);
  if (ref.field === undefined) return text;
  let value: unknown;
  try {
    value = (JSON.parse(text) as Record<string, unknown>)[ref.field];
  } catch {
    throw new SecretUnreadable(name, `${ref.secretsManager} is not a JSON object, so it has no field ${JSON.stringify(ref.field)}`);
  }
  if (typeof value !== "string") throw new SecretUnreadable(name, `${ref.secretsManager} has no string field ${JSON.stringify(ref.field)}`);
  return value;
}

/** One signed JSON-RPC call (`X-Amz-Target`) to Secrets Manager or SSM. */
async function call(env: NodeJS.ProcessEnv, service: "ssm" | "secretsmanager", target: string, body: unknown, name: string): Promise<unknown> {
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION;
  if (!region) throw new SecretUnreadable(name, `AWS_REGION is not set`);
  if (!env.AWS_ACCESS_KEY_ID || !env.AWS_SECRET_ACCESS_KEY) throw new SecretUnreadable(name, `no AWS credentials in the environment`);
  const endpoint =
    (service === "ssm" ? env.AWS_ENDPOINT_URL_SSM : env.AWS_ENDPOINT_URL_SECRETS_MANAGER) ||
    env.AWS_ENDPOINT_URL ||
    `https://${service}.${region}.amazonaws.com${region.startsWith("cn-") ? ".cn" : ""}`;
  const { AwsClient } = await import("aws4fetch");
  const client = new AwsClient({
    accessKeyId: env.AWS_ACCESS_KEY_ID,
    secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
    sessionToken: env.AWS_SESSION_TOKEN || undefined,
    region,
    service,
    retries: 3,
  });
  let res: Response;
  try {
    res = await client.fetch(endpoint, {
      method: "POST",
      headers: { "content-type": "application/x-amz-json-1.1", "x-amz-target": target },
      body: JSON.stringify(body),
    });
  } catch (err) {
    throw new SecretUnreadable(name, `${service} could not be reached (${err instanceof Error ? err.message : String(err)})`);
  }
  const text = await res.text();
  if (!res.ok) {
    let detail = text.slice(0, 300);
    try {
      const err = JSON.parse(text) as { __type?: string; message?: string; Message?: string };
      detail = `${(err.__type ?? "").split("#").pop()}: ${err.message ?? err.Message ?? ""}`;
    } catch {
      // not JSON: the raw text
    }
    throw new SecretUnreadable(name, `${service} answered ${res.status} ${detail}`);
  }
  return JSON.parse(text);
}
