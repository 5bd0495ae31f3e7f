/**
 * Secrets by reference at run time (issue 24): a function reads the secrets `HARNESS_SECRETS`
 * names from Secrets Manager and SSM Parameter Store (moto's server) once per container, into its
 * environment; a missing one fails the cold start naming it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HARNESS_ENV } from "../../../src/lambda/env.ts";
import { loadSecrets } from "../../../src/lambda/secrets.ts";
import { type Moto, motoAvailable, startMoto } from "../../support/moto.ts";

if (!motoAvailable) console.warn("secrets tests skipped: python3 -m moto.server is not available on this machine");

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
    const whole = (await moto.call("secretsmanager.CreateSecret", { Name: unique("whole"), SecretString: "sk-whole" })) as { ARN: string };
    const json = (await moto.call("secretsmanager.CreateSecret", { Name: unique("json"), SecretString: JSON.stringify({ anthropic: "sk-ant", openai: "sk-oai" }) })) as {
      ARN: string;
    };
    const parameter = `/harness/${unique("token")}`;
    await moto.call("AmazonSSM.PutParameter", { Name: parameter, Value: "bearer-123", Type: "SecureString" });
    const env = containerEnv({
      WHOLE_KEY: { secretsManager: whole.ARN },
      ANTHROPIC_API_KEY: { secretsManager: json.ARN, field: "anthropic" },
      HARNESS_BEARER_TOKEN: { ssm: parameter },
    });
    await loadSecrets(env);
    expect(env).toMatchObject({ WHOLE_KEY: "sk-whole", ANTHROPIC_API_KEY: "sk-ant", HARNESS_BEARER_TOKEN: "bearer-123" });
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

  it("a field the secret does not have is an error naming it", async () => {
    const created = (await moto.call("secretsmanager.CreateSecret", { Name: unique("nofield"), SecretString: JSON.stringify({ a: "1" }) })) as { ARN: string };
    await expect(loadSecrets(containerEnv({ B_KEY: { secretsManager: created.ARN, field: "b" } }))).rejects.toThrow(/secret B_KEY: .* has no string field "b"/);
  });
});

