/**
 * The construct's `secrets` (issue 24): a provider key or the bearer token reaches the functions
 * as a reference, never as a value in the template; each function's role may read exactly the
 * secrets it receives (provider keys: worker and dlq; the bearer token: http), and the function
 * gets only those references.
 */
import type { Stack } from "aws-cdk-lib";
import { Annotations, Match } from "aws-cdk-lib/assertions";
import type { Role } from "aws-cdk-lib/aws-iam";
import { Key } from "aws-cdk-lib/aws-kms";
import { Secret } from "aws-cdk-lib/aws-secretsmanager";
import nag from "cdk-nag";
import { describe, expect, it } from "vitest";
import type { HarnessProps } from "../../../src/cdk/harness.ts";
import { HarnessSecretInvalid } from "../../../src/cdk/harness-secrets.ts";
import { HARNESS_ENV, HARNESS_FUNCTION_ROLES, type HarnessFunctionRole } from "../../../src/lambda/env.ts";
import { envOf, logicalIdOf, synthHarness, type Synth } from "../../support/cdk-synth.ts";

/** The plaintext a deployment must never carry in its template. */
const PLAINTEXT = "sk-ant-do-not-ship-me";

const synth = (props: (stack: Stack) => Partial<HarnessProps>): Synth => synthHarness(props, { env: true });

/** The secret references a function gets, resolved (tokens as CloudFormation intrinsics). */
function secretsOf(s: Synth, role: HarnessFunctionRole): Record<string, unknown> | undefined {
  const raw = envOf(s, role)[HARNESS_ENV.secrets];
  if (raw === undefined) return undefined;
  // `{"Fn::Join": ["", [...parts]]}`: the JSON with each ARN as a Ref.
  const parts = (raw as { "Fn::Join"?: [string, unknown[]] })["Fn::Join"]?.[1] ?? [raw];
  const text = parts.map((p) => (typeof p === "string" ? p : JSON.stringify(p).replaceAll('"', "'"))).join("");
  return JSON.parse(text) as Record<string, unknown>;
}

function statementsOf(s: Synth, role: HarnessFunctionRole): { Action: string | string[]; Resource: unknown }[] {
  const roleId = logicalIdOf(s, s.harness.functions[role].role as Role);
  return Object.values(s.template.findResources("AWS::IAM::Policy")).flatMap((policy: any) =>
    policy.Properties.Roles.some((r: { Ref?: string }) => r.Ref === roleId) ? policy.Properties.PolicyDocument.Statement : [],
  );
}
const actions = (s: Synth, role: HarnessFunctionRole): string[] => statementsOf(s, role).flatMap((st) => (Array.isArray(st.Action) ? st.Action : [st.Action]));

describe("Harness: secrets", () => {
  const s = synth((stack) => {
    const providerKeys = new Secret(stack, "ProviderKeys", { secretStringValue: undefined });
    return {
      environment: { MODEL: "anthropic/claude-sonnet-4-5" },
      secrets: {
        ANTHROPIC_API_KEY: { secret: providerKeys, field: "anthropic" },
        HARNESS_BEARER_TOKEN: { parameterName: "/harness/bearer-token" },
        TOOL_TOKEN: { parameterName: "tool-token", encryptionKey: new Key(stack, "ToolKey"), functions: ["worker"] },
      },
    };
  });

  it("puts references, never values, into the functions: each gets only its own", () => {
    expect(JSON.stringify(s.template.toJSON())).not.toContain(PLAINTEXT);
    for (const role of HARNESS_FUNCTION_ROLES) {
      expect(envOf(s, role)).not.toHaveProperty("ANTHROPIC_API_KEY");
      expect(envOf(s, role)).not.toHaveProperty("HARNESS_BEARER_TOKEN");
    }
    expect(Object.keys(secretsOf(s, "worker")!).sort()).toEqual(["ANTHROPIC_API_KEY", "TOOL_TOKEN"]);
    expect(Object.keys(secretsOf(s, "dlq")!)).toEqual(["ANTHROPIC_API_KEY"]);
    expect(secretsOf(s, "http")).toEqual({ HARNESS_BEARER_TOKEN: { ssm: "/harness/bearer-token" } });
    expect(secretsOf(s, "sweeper")).toBeUndefined();
    expect(secretsOf(s, "worker")!.ANTHROPIC_API_KEY).toMatchObject({ field: "anthropic" });
    expect(secretsOf(s, "worker")!.TOOL_TOKEN).toEqual({ ssm: "tool-token" });
    // Non-secret settings stay in `environment`.
    expect(envOf(s, "worker").MODEL).toBe("anthropic/claude-sonnet-4-5");
  });

  it("grants each role exactly the secrets its function receives", () => {
    expect(actions(s, "worker")).toContain("secretsmanager:GetSecretValue");
    expect(actions(s, "dlq")).toContain("secretsmanager:GetSecretValue");
    expect(actions(s, "http")).not.toContain("secretsmanager:GetSecretValue");
    expect(actions(s, "sweeper")).not.toContain("secretsmanager:GetSecretValue");

    const ssmResources = (role: HarnessFunctionRole) =>
      statementsOf(s, role)
        .filter((st) => (Array.isArray(st.Action) ? st.Action : [st.Action]).includes("ssm:GetParameter"))
        .map((st) => JSON.stringify(s.stack.resolve(st.Resource)));
    expect(ssmResources("http")).toEqual([expect.stringContaining("parameter/harness/bearer-token")]);
    expect(ssmResources("worker")).toEqual([expect.stringContaining("parameter/tool-token")]);
    expect(ssmResources("dlq")).toEqual([]);
    expect(ssmResources("sweeper")).toEqual([]);
    expect(actions(s, "worker")).toContain("kms:Decrypt");
    expect(actions(s, "http")).not.toContain("kms:Decrypt");
  });

  it("grants GetSecretValue and nothing else of Secrets Manager (the cold-start read calls nothing else)", () => {
    for (const role of HARNESS_FUNCTION_ROLES) {
      const secretsManager = actions(s, role).filter((a) => a.startsWith("secretsmanager:"));
      expect(secretsManager, role).toEqual(role === "worker" || role === "dlq" ? ["secretsmanager:GetSecretValue"] : []);
    }
    // The stack's own secret without a key uses aws/secretsmanager, open to the account by its key policy: no decrypt grant.
    expect(actions(s, "dlq")).not.toContain("kms:Decrypt");
  });

  it("grants kms:Decrypt through Secrets Manager for a secret imported by ARN (its key may be customer-managed), and on the key itself when it is given", () => {
    const arn = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:prod/keys-AbCdEf";
    const imported = synth((stack) => ({ secrets: { ANTHROPIC_API_KEY: { secret: Secret.fromSecretCompleteArn(stack, "Imported", arn) } } }));
    for (const role of ["worker", "dlq"] as const) {
      const decrypt = statementsOf(imported, role).filter((st) => (Array.isArray(st.Action) ? st.Action : [st.Action]).includes("kms:Decrypt"));
      expect(decrypt, role).toEqual([
        expect.objectContaining({
          Resource: "arn:aws:kms:eu-west-1:111122223333:key/*",
          Condition: { StringEquals: { "kms:ViaService": "secretsmanager.eu-west-1.amazonaws.com" } },
        }),
      ]);
      const read = statementsOf(imported, role).filter((st) => (Array.isArray(st.Action) ? st.Action : [st.Action]).includes("secretsmanager:GetSecretValue"));
      expect(read.map((st) => st.Resource), role).toEqual([arn]);
    }
    for (const role of ["http", "sweeper"] as const) expect(actions(imported, role), role).not.toContain("kms:Decrypt");
    expect(harnessNagViolations(imported.stack)).toEqual([]);

    const keyArn = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab";
    const keyed = synth((stack) => ({
      secrets: {
        ANTHROPIC_API_KEY: { secret: Secret.fromSecretAttributes(stack, "Keyed", { secretCompleteArn: arn, encryptionKey: Key.fromKeyArn(stack, "SecretKey", keyArn) }) },
      },
    }));
    const decrypt = statementsOf(keyed, "worker").filter((st) => (Array.isArray(st.Action) ? st.Action : [st.Action]).includes("kms:Decrypt"));
    expect(decrypt).toEqual([expect.objectContaining({ Resource: keyArn })]);
  });

  it("raises no cdk-nag finding on the harness's resources", () => {
    const report = new nag.AwsSolutionsChecks().validateScope(s.stack);
    const ours = report.violations
      .map((v) => `${v.ruleName} at ${v.violatingResources.map((r) => r.constructPath).join(", ")}`)
      .filter((line) => line.includes("/Harness/"));
    expect(ours).toEqual([]);
  });

  it("refuses a secret also in `environment`, a bad name, two sources or none, and an unknown function", () => {
    const attempt = (secrets: HarnessProps["secrets"], environment?: Record<string, string>) => () =>
      synth((stack) => ({ environment, secrets: typeof secrets === "function" ? (secrets as (s: Stack) => HarnessProps["secrets"])(stack) : secrets }));
    expect(attempt({ OPENAI_API_KEY: { parameterName: "/k" } }, { OPENAI_API_KEY: PLAINTEXT })).toThrow(
      /secrets\.OPENAI_API_KEY: also set in `environment`: a secret must not travel in plain environment variables/,
    );
    expect(attempt({ "bad-name": { parameterName: "/k" } })).toThrow(/secrets\.bad-name: not an environment variable name/);
    expect(attempt({ K: {} })).toThrow(/give exactly one of `secret` and `parameterName`/);
    expect(attempt({ K: { parameterName: "/k", functions: ["nope" as HarnessFunctionRole] } })).toThrow(/unknown function "nope"/);
    expect(attempt({ TABLE_NAME: { parameterName: "/k" } })).toThrow(/names a variable the runtime or the construct sets/);
    // Typed: a caller can tell the construct's refusal from any other error.
    let refused: unknown;
    try {
      attempt({ K: {} })();
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(HarnessSecretInvalid);
    expect(refused).toMatchObject({ code: "harness_secret_invalid", secretName: "K" });
  });

  it("warns at synth about secret-like names in plain `environment`, naming them, never their values", () => {
    const plain = synth(() => ({ environment: { MODEL: "openai/gpt-4o", OPENAI_API_KEY: PLAINTEXT, GITHUB_TOKEN: PLAINTEXT } }));
    const warnings = Annotations.fromStack(plain.stack).findWarning("*", Match.anyValue());
    expect(warnings).toHaveLength(1);
    const text = JSON.stringify(warnings[0]!.entry.data);
    expect(text).toContain("GITHUB_TOKEN, OPENAI_API_KEY look like secrets");
    expect(text).toContain(PLAINTEXT_FREE_HINT);
    expect(text).not.toContain(PLAINTEXT);
    expect(text).not.toContain("MODEL");
    // Passed as `secrets`, nothing to warn about.
    expect(Annotations.fromStack(s.stack).findWarning("*", Match.anyValue())).toEqual([]);
  });

  it("the warning's matcher catches secrets by any usual name, or a credential in the value, and leaves named non-secrets alone (issue 33)", () => {
    const secretLike = {
      MY_PASSWD: PLAINTEXT, DB_PASS: PLAINTEXT, SMTP_PWD: PLAINTEXT, dbPassword: PLAINTEXT, MYPASSWD: PLAINTEXT,
      GPG_PASSPHRASE: PLAINTEXT, APP_SECRETS: PLAINTEXT, DB_CREDS: PLAINTEXT, GOOGLE_CREDENTIAL: PLAINTEXT,
      BASIC_AUTH: PLAINTEXT, SESSION_COOKIE: PLAINTEXT, SENTRY_DSN: PLAINTEXT, DB_CONNECTION_STRING: PLAINTEXT,
      PRIVATE_KEY_PEM: PLAINTEXT, SIGNING_KEYS: PLAINTEXT, AUTH_TOKEN_B64: PLAINTEXT, PASSWORD_SALT: PLAINTEXT,
      ANTHROPIC_API_KEY: PLAINTEXT, DB_CREDENTIALS: PLAINTEXT,
      // Any name: the value is a URL with a password, or a private key.
      DATABASE_URL: `postgres://app:${PLAINTEXT}@db.internal:5432/app`,
      SIGNER: `-----BEGIN RSA PRIVATE KEY-----\n${PLAINTEXT}\n-----END RSA PRIVATE KEY-----`,
    };
    const notSecret = {
      MODEL: "openai/gpt-4o", AWS_ACCESS_KEY_ID_FOR_TOOLS: "AKIA", KMS_KEY_ID: "k", KMS_KEY_ARN: "arn", SECRET_ARN: "arn",
      TOKEN_URL: "https://auth.example.com/token", AUTH_DOMAIN: "example.auth0.com", PASSWORD_FILE: "/run/pw",
      JWT_PUBLIC_KEY: "-----BEGIN PUBLIC KEY-----", STRIPE_PUBLISHABLE_KEY: "pk_live", TABLE_PARTITION_KEY: "pk", SORT_KEY: "sk",
      MONKEY: "banana", BYPASS: "1", OAUTH: "on", SESSION_TTL: "3600", PWD: "/var/task", PUBLIC_URL: "https://user@example.com/",
    };
    const plain = synth(() => ({ environment: { ...secretLike, ...notSecret } }));
    const warnings = Annotations.fromStack(plain.stack).findWarning("*", Match.anyValue());
    expect(warnings).toHaveLength(1);
    const text = JSON.stringify(warnings[0]!.entry.data);
    const named = /environment (.*?) look like secrets/.exec(text)![1]!.split(", ");
    expect(named).toEqual(Object.keys(secretLike).sort());
    expect(text).not.toContain(PLAINTEXT);
  });
});

/** cdk-nag's findings on the harness's resources (the test's own resources are not the harness's). */
function harnessNagViolations(stack: Stack): string[] {
  return new nag.AwsSolutionsChecks()
    .validateScope(stack)
    .violations.map((v) => `${v.ruleName} at ${v.violatingResources.map((r) => r.constructPath).join(", ")}`)
    .filter((line) => line.includes("/Harness/"));
}

/** What the synth warning tells the user to do instead. */
const PLAINTEXT_FREE_HINT = "pass secrets with the `secrets` prop";
