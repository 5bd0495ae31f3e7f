import { FunctionUrlAuthType } from "aws-cdk-lib/aws-lambda";
import type { HarnessSecret } from "./harness-secrets.ts";

/** The environment variable the http function reads the callback token(s) from (comma-separated). */
export const CALLBACK_TOKEN_VARIABLE = "HARNESS_CALLBACK_TOKEN";

/**
 * The callback route (`POST /callbacks/:callbackId`, ADR 0025) behind a bearer token of its own,
 * for the third parties that answer deferred tools' callbacks (a CI system, a warehouse, an e-mail
 * link's backend): they get this token, never the API's credentials, and it opens nothing else.
 */
export interface HarnessCallbacksOptions {
  /**
   * Where the token lives, by reference as in `secrets` (a Secrets Manager secret, optionally one
   * field of its JSON, or an SSM SecureString parameter): only the http function's role may read
   * it; the function reads it at cold start as `HARNESS_CALLBACK_TOKEN`. Several tokens,
   * comma-separated in the value, are all accepted (rotation).
   */
  readonly bearerToken: Omit<HarnessSecret, "functions">;
}

/**
 * Checks `callbacks` against the front door and returns the construct's `secrets` with the
 * callback token added (to the http function only).
 * @throws naming the problem: a function URL with `AWS_IAM` auth (a third party cannot sign),
 *   or the token given both here and in `secrets`
 */
export function secretsWithCallbackToken(props: {
  callbacks?: HarnessCallbacksOptions;
  secrets?: Readonly<Record<string, HarnessSecret>>;
  apiGateway?: unknown;
  urlAuthType?: FunctionUrlAuthType;
}): Readonly<Record<string, HarnessSecret>> | undefined {
  if (!props.callbacks) return props.secrets;
  if (!props.apiGateway && (props.urlAuthType ?? FunctionUrlAuthType.AWS_IAM) === FunctionUrlAuthType.AWS_IAM) {
    throw new Error(
      "Harness: callbacks.bearerToken needs a front door a third party can pass without AWS credentials: " +
        "`apiGateway` (POST /callbacks/{callbackId} is then opened at the API and checked by the token; every other route keeps its auth) " +
        "or `urlAuthType: NONE` (every route then checks a token: pass HARNESS_BEARER_TOKEN in `secrets` too, or give `auth`). " +
        "An AWS_IAM function URL admits only signed requests.",
    );
  }
  if (props.secrets?.[CALLBACK_TOKEN_VARIABLE] !== undefined) {
    throw new Error(`Harness: the callback token is given twice: as callbacks.bearerToken and as secrets.${CALLBACK_TOKEN_VARIABLE}; keep one`);
  }
  return { ...props.secrets, [CALLBACK_TOKEN_VARIABLE]: { ...props.callbacks.bearerToken, functions: ["http"] } };
}
