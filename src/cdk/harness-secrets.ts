import { Annotations, Arn, ArnFormat, Resource, Stack, Validations } from "aws-cdk-lib";
import { type IGrantable, PolicyStatement } from "aws-cdk-lib/aws-iam";
import type { IKey } from "aws-cdk-lib/aws-kms";
import type { Function as CdkFunction } from "aws-cdk-lib/aws-lambda";
import type { ISecret } from "aws-cdk-lib/aws-secretsmanager";
import type { Construct, IConstruct } from "constructs";
import { nagResourceName } from "./nag-suppressions.ts";
import { HARNESS_ENV, HARNESS_FUNCTION_ROLES, type HarnessFunctionRole } from "../lambda/env.ts";
import { looksLikeSecret } from "../lambda/secret-like.ts";
import { SECRET_NAME, type SecretReference } from "../lambda/secrets.ts";

/** A `secrets` entry the construct refuses (at synth); the message names the entry and the problem. */
export class HarnessSecretInvalid extends Error {
  readonly code = "harness_secret_invalid";
  /** The entry's name (the environment variable it would set). */
  readonly secretName: string;
  constructor(secretName: string, why: string) {
    super(`Harness: secrets.${secretName}: ${why}`);
    this.name = "HarnessSecretInvalid";
    this.secretName = secretName;
  }
}

/** The id of the synth warning {@link warnPlainSecrets} adds (acknowledge it to silence it). */
export const PLAIN_SECRET_WARNING = "resolute-harness:plain-secret";

/**
 * Warns at synth (`cdk synth` prints it; `--strict` fails on it) when `environment` holds names
 * or values that look like secrets ({@link looksLikeSecret}: `…KEY`, `…TOKEN`, `…SECRET`,
 * `…PASSWD`, `…PASS`, `…AUTH`, `…DSN`, …, or a URL with a password): the template and every
 * function's configuration show their values. Names only in the message.
 */
export function warnPlainSecrets(scope: Construct, environment: Readonly<Record<string, string>>): void {
  const names = Object.keys(environment).filter((name) => looksLikeSecret(name, environment[name])).sort();
  if (names.length === 0) return;
  Annotations.of(scope).addWarningV2(
    PLAIN_SECRET_WARNING,
    `environment ${names.join(", ")} look${names.length === 1 ? "s" : ""} like secret${names.length === 1 ? "" : "s"}: plain environment is readable in the template and in every function's configuration; pass secrets with the \`secrets\` prop (Secrets Manager or SSM SecureString references)`,
  );
}

/**
 * A secret handed to the harness's functions by reference: the function's configuration holds
 * only where it lives, the function reads it at cold start (once per container) and sets it as
 * the environment variable of its name. Give one of `secret` or `parameterName`.
 */
export interface HarnessSecret {
  /**
   * A Secrets Manager secret. The role gets `secretsmanager:GetSecretValue` on it and `kms:Decrypt`
   * through Secrets Manager: on its `encryptionKey` when the secret knows it, else (a secret
   * imported by ARN or name, whose key may be customer-managed) on the keys of the secret's account
   * and region, only via `secretsmanager.<region>.amazonaws.com`.
   */
  readonly secret?: ISecret;
  /** With `secret`: a field of the secret's JSON value (default: the whole `SecretString`). */
  readonly field?: string;
  /**
   * An SSM parameter's name (`/my-app/anthropic-key`), a SecureString created outside the stack
   * (CloudFormation cannot create SecureStrings); read with decryption.
   */
  readonly parameterName?: string;
  /** With `parameterName`: the KMS key of the SecureString when it is not the account's `aws/ssm` key. */
  readonly encryptionKey?: IKey;
  /**
   * The functions that receive it, and no others (each role is granted only the secrets it gets).
   * @default ["http"] for `HARNESS_BEARER_TOKEN` and `HARNESS_CALLBACK_TOKEN`; otherwise ["worker", "dlq"], the functions that
   *   run agents and so call model providers
   */
  readonly functions?: readonly HarnessFunctionRole[];
}

/** Default receivers of a secret, by its name. */
function defaultFunctions(name: string): readonly HarnessFunctionRole[] {
  return name === "HARNESS_BEARER_TOKEN" || name === "HARNESS_CALLBACK_TOKEN" ? ["http"] : ["worker", "dlq"];
}

/**
 * Checks `secrets` (names, one source each, known roles, no clash with `environment`), grants each
 * function's role read access to exactly the secrets it receives, and sets `HARNESS_SECRETS` on
 * those functions.
 * @throws HarnessSecretInvalid naming the first problem
 */
export function wireSecrets(
  scope: Construct,
  secrets: Readonly<Record<string, HarnessSecret>>,
  functions: Readonly<Record<HarnessFunctionRole, { function: CdkFunction; role: IGrantable & IConstruct }>>,
  environment: Readonly<Record<string, string>>,
): void {
  const byRole = new Map<HarnessFunctionRole, Record<string, SecretReference>>();
  for (const [name, secret] of Object.entries(secrets)) {
    const problem = (why: string) => new HarnessSecretInvalid(name, why);
    if (!SECRET_NAME.test(name)) throw problem("not an environment variable name (letters, digits and _, not starting with a digit)");
    if (name in environment) throw problem("also set in `environment`: a secret must not travel in plain environment variables");
    if (name.startsWith("AWS_") || (Object.values(HARNESS_ENV) as string[]).includes(name)) {
      throw problem("names a variable the runtime or the construct sets");
    }
    if ((secret.secret === undefined) === (secret.parameterName === undefined)) throw problem("give exactly one of `secret` and `parameterName`");
    if (secret.field !== undefined && secret.secret === undefined) throw problem("`field` applies to a Secrets Manager `secret` only");
    if (secret.encryptionKey !== undefined && secret.parameterName === undefined) throw problem("`encryptionKey` applies to `parameterName` only");
    const roles = secret.functions ?? defaultFunctions(name);
    if (roles.length === 0) throw problem("`functions` is empty");
    for (const role of roles) {
      if (!HARNESS_FUNCTION_ROLES.includes(role)) throw problem(`unknown function ${JSON.stringify(role)} (one of ${HARNESS_FUNCTION_ROLES.join(", ")})`);
    }
    const reference: SecretReference = secret.secret
      ? { secretsManager: secret.secret.secretArn, ...(secret.field !== undefined ? { field: secret.field } : {}) }
      : { ssm: secret.parameterName! };
    for (const role of new Set(roles)) {
      const grantee = functions[role].role;
      if (secret.secret) {
        grantSecretRead(secret.secret, grantee);
      } else {
        grantee.grantPrincipal.addToPrincipalPolicy(
          new PolicyStatement({ actions: ["ssm:GetParameter"], resources: [parameterArn(scope, secret.parameterName!)] }),
        );
        secret.encryptionKey?.grantDecrypt(grantee);
      }
      byRole.set(role, { ...byRole.get(role), [name]: reference });
    }
  }
  for (const [role, references] of byRole) {
    functions[role].function.addEnvironment(HARNESS_ENV.secrets, Stack.of(scope).toJsonString(references));
  }
}

/**
 * What the function's cold-start read of a Secrets Manager secret calls (`src/lambda/secrets.ts`:
 * GetSecretValue, nothing else: not `ISecret.grantRead`'s DescribeSecret) and the decrypt it
 * causes: Secrets Manager decrypts the value with the secret's KMS key as the caller, so a
 * customer-managed key needs `kms:Decrypt` in the caller's role. A secret this stack creates
 * without a key uses `aws/secretsmanager`, which its key policy opens to the account.
 */
function grantSecretRead(secret: ISecret, grantee: IGrantable & IConstruct): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({
      actions: ["secretsmanager:GetSecretValue"],
      // A partial ARN (imported by name) matches the full one by its 6-character suffix.
      resources: [secret.secretFullArn ?? `${secret.secretArn}-??????`],
    }),
  );
  const arn = Arn.split(secret.secretArn, ArnFormat.COLON_RESOURCE_NAME);
  const decryptVia = (keys: string) =>
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ["kms:Decrypt"],
        resources: [keys],
        conditions: { StringEquals: { "kms:ViaService": `secretsmanager.${arn.region}.amazonaws.com` } },
      }),
    );
  // In the role's policy, not the key's (`IKey.grantDecrypt` with a service principal adds
  // nothing for an imported key): a key whose policy lets the account's IAM policies grant it.
  if (secret.encryptionKey) {
    decryptVia(secret.encryptionKey.keyArn);
  } else if (!Resource.isOwnedResource(secret)) {
    // Imported: the key is not known here and may be customer-managed (the example app's `sm:`).
    const keys = `arn:${arn.partition}:kms:${arn.region}:${arn.account}:key/*`;
    decryptVia(keys);
    Validations.of(grantee).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${nagResourceName(grantee, keys)}]`,
      reason:
        "A Secrets Manager secret imported by ARN does not name its KMS key: decrypt is granted on the keys of the secret's account and region, only through Secrets Manager there (kms:ViaService). Import it with `Secret.fromSecretAttributes({secretCompleteArn, encryptionKey})` to narrow it to the key.",
    });
  }
}

function parameterArn(scope: Construct, name: string): string {
  return Stack.of(scope).formatArn({
    service: "ssm",
    resource: "parameter",
    resourceName: name.replace(/^\//, ""),
    arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
  });
}
