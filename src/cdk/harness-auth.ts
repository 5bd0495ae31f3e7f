import { Token } from "aws-cdk-lib";
import { CognitoUserPoolsAuthorizer } from "aws-cdk-lib/aws-apigateway";
import type { IUserPool, IUserPoolClient } from "aws-cdk-lib/aws-cognito";
import { FunctionUrlAuthType } from "aws-cdk-lib/aws-lambda";
import type { Construct } from "constructs";
import { AUTH_ENV } from "../auth/auth-from-env.ts";

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

/** An audience option as a list. */
export const audienceList = (audience: string | readonly string[]): readonly string[] => (typeof audience === "string" ? [audience] : audience);
