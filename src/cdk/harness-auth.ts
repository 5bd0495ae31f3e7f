import { Token } from "aws-cdk-lib";
import { CognitoUserPoolsAuthorizer } from "aws-cdk-lib/aws-apigateway";
import type { IUserPool, IUserPoolClient } from "aws-cdk-lib/aws-cognito";
import { FunctionUrlAuthType } from "aws-cdk-lib/aws-lambda";
import type { Construct } from "constructs";
import { AUTH_ENV } from "../auth/auth-from-env.ts";
import { HarnessPropsInvalid } from "./harness-checks.ts";
import type { HarnessProps } from "./harness-props.ts";

/**
 * The construct's `auth` (ADR 0045): users sign in with an OIDC issuer and the http function
 * verifies their JWTs itself (ADR 0043's `authFromEnv`), behind a function URL with `authType:
 * NONE` or an API Gateway that may add a Cognito authorizer in front.
 */

/** Users' JWTs from any OIDC issuer (Auth0, Okta, Google, Keycloak, a Cognito user pool by its issuer URL). */
export interface HarnessJwtAuthOptions {
  /**
   * The issuer, exactly as tokens carry it in `iss` (`https://…`; keep or omit the trailing slash
   * as the issuer writes it). Synth refuses one that is not `https`: the function fetches the
   * issuer's keys from it, and over plain HTTP anyone on the path could hand it keys of their own.
   */
  readonly issuer: string;
  /**
   * The accepted audience(s): a token's `aud` (or, without `aud`, its `client_id`: a Cognito
   * access token) must name one. Usually your app client id. Synth refuses an empty list, a blank
   * value and a comma inside a value (the function reads them comma-separated).
   */
  readonly audience: string | readonly string[];
  /**
   * The issuer's key set (`https`).
   * @default the `jwks_uri` of the issuer's discovery document, or `<issuer>/.well-known/jwks.json`
   */
  readonly jwksUrl?: string;
  /**
   * The claim naming the instance a user owns, e.g. a tenant claim, so a tenant's users share
   * their instance (the default policy, ADR 0043).
   * @default "sub": each user owns the instance named by their own id
   */
  readonly ownerClaim?: string;
}

/** Users of a Cognito user pool. */
export interface HarnessCognitoAuthOptions {
  /** The user pool (made in this app, or imported: `UserPool.fromUserPoolArn`). Its issuer is `https://cognito-idp.<region>.amazonaws.com/<pool id>`. */
  readonly userPool: IUserPool;
  /** The app clients whose tokens are accepted (their ids are the audience), as constructs or ids. At least one. */
  readonly clients: readonly (IUserPoolClient | string)[];
  /**
   * The claim naming the instance a user owns (a custom attribute such as `custom:tenant`).
   * @default "sub"
   */
  readonly ownerClaim?: string;
  /**
   * With `apiGateway`: OAuth scopes the Cognito authorizer requires (`AuthorizationScopes` on every
   * method it guards). Then clients send their **access** token, which must carry one of them;
   * without scopes API Gateway's Cognito authorizer takes the **ID** token. The app accepts both.
   * Refused without `apiGateway` (a function URL has no authorizer).
   * @default no scopes: the ID token
   */
  readonly scopes?: readonly string[];
}

/** Who may call the harness: users with a JWT from an OIDC issuer, or from a Cognito user pool. Exactly one of the two. */
export interface HarnessAuthOptions {
  /** Any OIDC issuer: the app verifies the tokens (behind `apiGateway` too: a REST API has no JWT authorizer). */
  readonly jwt?: HarnessJwtAuthOptions;
  /** A Cognito user pool: the app verifies the tokens, and with `apiGateway` a Cognito user pools authorizer checks them first. */
  readonly cognito?: HarnessCognitoAuthOptions;
}

/** The issuer of a Cognito user pool's tokens (the pool's provider name is `cognito-idp.<region>.<suffix>/<id>`). */
export function cognitoIssuer(userPool: IUserPool): string {
  return `https://${userPool.userPoolProviderName}`;
}

/** The `AUTH_*` variables the http function reads (`authFromEnv`), for `auth`. */
export function authEnvironment(auth: HarnessAuthOptions): Record<string, string> {
  const { issuer, audiences, jwksUrl, ownerClaim } = auth.cognito
    ? {
        issuer: cognitoIssuer(auth.cognito.userPool),
        audiences: auth.cognito.clients.map((c) => (typeof c === "string" ? c : c.userPoolClientId)),
        jwksUrl: undefined,
        ownerClaim: auth.cognito.ownerClaim,
      }
    : { issuer: auth.jwt!.issuer, audiences: audienceList(auth.jwt!.audience), jwksUrl: auth.jwt!.jwksUrl, ownerClaim: auth.jwt!.ownerClaim };
  return {
    [AUTH_ENV.issuer]: issuer,
    [AUTH_ENV.audience]: audiences.join(","),
    ...(jwksUrl !== undefined ? { [AUTH_ENV.jwksUrl]: jwksUrl } : {}),
    ...(ownerClaim !== undefined && ownerClaim !== "sub" ? { [AUTH_ENV.ownerClaim]: ownerClaim } : {}),
  };
}

/** The Cognito user pools authorizer put in front of the API's methods, for `auth.cognito` with `apiGateway`. */
export function cognitoAuthorizer(scope: Construct, auth: HarnessAuthOptions | undefined): CognitoUserPoolsAuthorizer | undefined {
  if (!auth?.cognito) return undefined;
  return new CognitoUserPoolsAuthorizer(scope, "UserPoolAuthorizer", { cognitoUserPools: [auth.cognito.userPool] });
}

const audienceList = (audience: string | readonly string[]): readonly string[] => (typeof audience === "string" ? [audience] : audience);

/**
 * Refuses an `auth` that cannot work or contradicts the other props: neither or both of `jwt`
 * and `cognito`; an `AWS_IAM` front door (a browser holding a user's token cannot sign); an issuer
 * or key set URL that is not `https`; an empty audience; the `AUTH_*` variables also given in
 * `environment`; a Cognito authorizer beside `apiGateway.authorizer`. Values that are tokens
 * (known only at deployment) are not inspected.
 * @throws HarnessPropsInvalid naming the fix
 */
export function checkAuth(props: HarnessProps): void {
  const auth = props.auth;
  if (auth === undefined) return;
  if ((auth.jwt === undefined) === (auth.cognito === undefined)) {
    throw new HarnessPropsInvalid("auth", "give exactly one of `jwt` (any OIDC issuer) and `cognito` (a user pool)");
  }
  if (props.urlAuthType === FunctionUrlAuthType.AWS_IAM) {
    throw new HarnessPropsInvalid(
      "auth",
      `with urlAuthType AWS_IAM only SigV4-signed requests would pass ${props.apiGateway ? "the API" : "the function URL"}, and a browser holding a user's token cannot sign: ` +
        "leave urlAuthType unset (with `auth` it is NONE and the app verifies the tokens)",
    );
  }
  const given = Object.values(AUTH_ENV).filter((name) => name !== AUTH_ENV.bearerToken && props.environment?.[name] !== undefined);
  if (given.length > 0) {
    throw new HarnessPropsInvalid("auth", `${given.join(", ")} given in \`environment\` too: keep \`auth\` (it sets them on the http function) and remove them from \`environment\``);
  }
  const ownerClaim = auth.jwt?.ownerClaim ?? auth.cognito?.ownerClaim;
  if (ownerClaim !== undefined && !Token.isUnresolved(ownerClaim) && (ownerClaim.trim() === "" || ownerClaim !== ownerClaim.trim())) {
    throw new HarnessPropsInvalid("auth", `ownerClaim ${JSON.stringify(ownerClaim)} is not a claim name (leave it unset for "sub")`);
  }
  if (auth.jwt) {
    checkHttpsUrl("auth.jwt.issuer", auth.jwt.issuer);
    if (auth.jwt.jwksUrl !== undefined) checkHttpsUrl("auth.jwt.jwksUrl", auth.jwt.jwksUrl);
    checkAudiences("auth.jwt.audience", audienceList(auth.jwt.audience));
  } else {
    const cognito = auth.cognito!;
    checkAudiences(
      "auth.cognito.clients",
      cognito.clients.map((c) => (typeof c === "string" ? c : c.userPoolClientId)),
    );
    if (cognito.scopes !== undefined) {
      if (!props.apiGateway) throw new HarnessPropsInvalid("auth", "cognito.scopes are required by the API Gateway authorizer: they need `apiGateway` (a function URL has no authorizer)");
      if (cognito.scopes.length === 0 || cognito.scopes.some((s) => !Token.isUnresolved(s) && (s.trim() === "" || /\s/.test(s)))) {
        throw new HarnessPropsInvalid("auth", "cognito.scopes must name at least one scope, each without spaces (e.g. `harness/agents`), or be left unset");
      }
    }
    if (props.apiGateway && typeof props.apiGateway === "object" && props.apiGateway.authorizer !== undefined) {
      throw new HarnessPropsInvalid(
        "auth",
        "auth.cognito puts a Cognito user pools authorizer on the API and apiGateway.authorizer gives another: a method takes one. Drop apiGateway.authorizer, or use auth.jwt with your own authorizer",
      );
    }
  }
}

function checkHttpsUrl(prop: string, value: string): void {
  if (Token.isUnresolved(value)) return;
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (url === undefined || value.trim() !== value) throw new HarnessPropsInvalid(prop, `${JSON.stringify(value)} is not a URL`);
  if (url.protocol !== "https:") {
    // Not even on loopback: the function's own loopback runs no issuer, and over plain HTTP
    // anyone on the path could serve keys of their own and sign any token.
    throw new HarnessPropsInvalid(prop, `${JSON.stringify(value)} is not https: the http function fetches the issuer's keys from it, and keys fetched over plain HTTP could be anyone's`);
  }
}

function checkAudiences(prop: string, audiences: readonly string[]): void {
  if (audiences.length === 0) throw new HarnessPropsInvalid(prop, "no audience: name at least one (your app client id) that tokens must carry");
  for (const audience of audiences) {
    if (Token.isUnresolved(audience)) continue;
    if (audience.trim() === "" || audience.includes(",")) {
      throw new HarnessPropsInvalid(prop, `${JSON.stringify(audience)} is not an audience (blank, or a comma the function would split it at)`);
    }
  }
}
