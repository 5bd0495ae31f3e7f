/**
 * Secrets by reference at run time (issue 24): a function reads the secrets `HARNESS_SECRETS`
 * names from Secrets Manager and SSM Parameter Store (moto's server) once per container, into its
 * environment; a missing one fails the cold start naming it (typed errors). The values are made up
 * per run and live only in moto, so the test fails unless they were really read from it.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HARNESS_ENV } from "../../../src/lambda/env.ts";
import { loadSecrets, plainSecretLikeNames, SecretReferencesInvalid, SecretUnreadable } from "../../../src/lambda/secrets.ts";
import { type Moto, motoAvailable, startMoto } from "../../support/moto.ts";

if (!motoAvailable) console.warn("secrets tests skipped: python3 -m moto.server is not available on this machine");

// Where CI runs (`CI` set), a missing moto is a failure, not a silent skip.
it.runIf(process.env.CI !== undefined && process.env.CI !== "")("moto is available where CI runs (python3 -m moto.server)", () => {
  expect(motoAvailable).toBe(true);
});

let moto: Moto;
beforeAll(async () => {
  if (motoAvailable) moto = await startMoto();
}, 60_000);
afterAll(async () => {
  await moto?.stop();
});

/** A container's environment: the emulators' region and credentials, moto for both services. */
function containerEnv(secrets: unknown): NodeJS.ProcessEnv {
  return {
    AWS_REGION: "us-east-1",
    AWS_ACCESS_KEY_ID: "test",
    AWS_SECRET_ACCESS_KEY: "test",
    AWS_ENDPOINT_URL_SECRETS_MANAGER: moto.url,
    AWS_ENDPOINT_URL_SSM: moto.url,
    [HARNESS_ENV.secrets]: JSON.stringify(secrets),
  };
}

let seq = 0;
const unique = (prefix: string) => `${prefix}-${Date.now()}-${++seq}`;

describe.skipIf(!motoAvailable)("secrets at cold start (moto)", () => {
  it("reads a whole secret, one JSON field of another and a SecureString parameter, decrypted, into the environment", async () => {
    // Values made up now, stored only in moto: the environment can hold them only if they were read from it.
    const values = { whole: `sk-whole-${randomUUID()}`, anthropic: `sk-ant-${randomUUID()}`, bearer: `bearer-${randomUUID()}` };
    const whole = (await moto.call("secretsmanager.CreateSecret", { Name: unique("whole"), SecretString: values.whole })) as { ARN: string };
    const json = (await moto.call("secretsmanager.CreateSecret", {
      Name: unique("json"),
      SecretString: JSON.stringify({ anthropic: values.anthropic, openai: "sk-oai" }),
    })) as { ARN: string };
    const parameter = `/harness/${unique("token")}`;
    await moto.call("AmazonSSM.PutParameter", { Name: parameter, Value: values.bearer, Type: "SecureString" });
    const references = {
      WHOLE_KEY: { secretsManager: whole.ARN },
      ANTHROPIC_API_KEY: { secretsManager: json.ARN, field: "anthropic" },
      HARNESS_BEARER_TOKEN: { ssm: parameter },
    };
    const env = containerEnv(references);
    // The function's configuration holds the references only: no value, no variable of their names.
    for (const value of Object.values(values)) expect(JSON.stringify(env)).not.toContain(value);
    expect(Object.keys(env).filter((name) => name in references)).toEqual([]);
    expect(JSON.parse(env[HARNESS_ENV.secrets]!)).toEqual(references);
    await loadSecrets(env);
    expect(env).toMatchObject({ WHOLE_KEY: values.whole, ANTHROPIC_API_KEY: values.anthropic, HARNESS_BEARER_TOKEN: values.bearer });
    // Read by reference, so none of them is "plain environment" to warn about.
    expect(plainSecretLikeNames(env)).toEqual([]);
  });

  it("reads once per container: a later load does not ask again (the secret's deletion goes unnoticed until the next cold start)", async () => {
    const name = unique("once");
    const created = (await moto.call("secretsmanager.CreateSecret", { Name: name, SecretString: "first" })) as { ARN: string };
    const env = containerEnv({ ONCE_KEY: { secretsManager: created.ARN } });
    await loadSecrets(env);
    await moto.call("secretsmanager.DeleteSecret", { SecretId: created.ARN, ForceDeleteWithoutRecovery: true });
    await loadSecrets(env);
    expect(env.ONCE_KEY).toBe("first");
    // A new container (a new environment) reads again, and now fails.
    await expect(loadSecrets(containerEnv({ ONCE_KEY: { secretsManager: created.ARN } }))).rejects.toThrow(/secret ONCE_KEY: secretsmanager answered 4\d\d ResourceNotFoundException/);
  });

  it("a missing secret fails the load naming the variable (never a value); the next load tries again", async () => {
    const parameter = `/harness/${unique("later")}`;
    const env = containerEnv({ LATER_KEY: { ssm: parameter } });
    await expect(loadSecrets(env)).rejects.toThrow(/^secret LATER_KEY: ssm answered 400 ParameterNotFound/);
    expect(env.LATER_KEY).toBeUndefined();
    await moto.call("AmazonSSM.PutParameter", { Name: parameter, Value: "now-there", Type: "SecureString" });
    await loadSecrets(env);
    expect(env.LATER_KEY).toBe("now-there");
  });

  it("errors are typed: an unreadable secret names its variable (code secret_unreadable), bad references are secret_references_invalid", async () => {
    const failed = await loadSecrets(containerEnv({ GONE_KEY: { ssm: `/harness/${unique("gone")}` } })).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(SecretUnreadable);
    expect(failed).toMatchObject({ code: "secret_unreadable", secretName: "GONE_KEY" });
    const unreachable = { ...containerEnv({ FAR_KEY: { ssm: "/x" } }), AWS_ENDPOINT_URL_SSM: "http://127.0.0.1:9" };
    await expect(loadSecrets(unreachable)).rejects.toMatchObject({ code: "secret_unreadable", message: expect.stringMatching(/^secret FAR_KEY: ssm could not be reached/) });
    await expect(loadSecrets(containerEnv(["not", "an", "object"]))).rejects.toBeInstanceOf(SecretReferencesInvalid);
    await expect(loadSecrets(containerEnv({ K: { ssm: "" } }))).rejects.toMatchObject({ code: "secret_references_invalid" });
  });

  it("a field the secret does not have is an error naming it", async () => {
    const created = (await moto.call("secretsmanager.CreateSecret", { Name: unique("nofield"), SecretString: JSON.stringify({ a: "1" }) })) as { ARN: string };
    await expect(loadSecrets(containerEnv({ B_KEY: { secretsManager: created.ARN, field: "b" } }))).rejects.toThrow(/secret B_KEY: .* has no string field "b"/);
  });
});


describe("secret-like names in plain environment (the cold start warns about them)", () => {
  it("names the plain ones only: not those read by reference, not Lambda's own AWS_*", () => {
    const env: NodeJS.ProcessEnv = {
      OPENAI_API_KEY: "sk-plain",
      GITHUB_TOKEN: "ghp-plain",
      WEBHOOK_SECRET: "s",
      DB_PASSWORD: "p",
      MODEL: "openai/gpt-4o",
      AWS_SECRET_ACCESS_KEY: "from-lambda",
      AWS_SESSION_TOKEN: "from-lambda",
      HARNESS_BEARER_TOKEN: "read-at-cold-start",
      [HARNESS_ENV.secrets]: JSON.stringify({ HARNESS_BEARER_TOKEN: { ssm: "/t" } }),
    };
    expect(plainSecretLikeNames(env)).toEqual(["DB_PASSWORD", "GITHUB_TOKEN", "OPENAI_API_KEY", "WEBHOOK_SECRET"]);
  });
});
