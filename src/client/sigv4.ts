import { AwsV4Signer } from "aws4fetch";

/** AWS credentials, as the SDK's providers and STS hand them out. */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** Returns current credentials; called for every request, so it should cache (the SDK's providers do). */
export type AwsCredentialsProvider = () => Promise<AwsCredentials>;

/**
 * Signing of every request with AWS Signature Version 4, for a harness behind an `AWS_IAM`
 * function URL (the `Harness` construct's default) or an API Gateway with IAM auth.
 */
export interface SigV4Options {
  /**
   * The credentials, or a provider of them. Default, in Node: the AWS SDK's default provider
   * chain (environment, shared config and SSO, container and instance roles), from
   * `@aws-sdk/credential-provider-node`, loaded on the first request (install it beside the
   * client). A browser has no such chain: pass credentials (e.g. from Cognito) there.
   */
  credentials?: AwsCredentials | AwsCredentialsProvider;
  /** Default: the region of a function URL's host (`….lambda-url.<region>.on.aws`), else `AWS_REGION`. */
  region?: string;
  /** The signing service. Default `lambda` (a function URL); `execute-api` for API Gateway. */
  service?: string;
}

/** What is signed: the request exactly as it will be sent. */
export interface SignableRequest {
  method: string;
  url: string;
  headers: Headers;
  /** The body as sent ("" or absent for none). */
  body?: string | Uint8Array;
}

/** Signs a request: resolves with the headers to send (Authorization, X-Amz-Date, … added). */
export type RequestSigner = (request: SignableRequest) => Promise<Headers>;

const DEFAULT_CHAIN_MODULE = "@aws-sdk/credential-provider-node";

/**
 * A SigV4 signer over `aws4fetch` (WebCrypto, so the same code signs in Node and browsers). The
 * body's SHA-256 travels in `X-Amz-Content-Sha256` (signed), so a verifier can check the payload
 * without buffering assumptions; a GET signs the empty body.
 *
 * @param now the signing time (tests)
 */
export function sigv4Signer(options: SigV4Options, now: () => Date = () => new Date()): RequestSigner {
  const service = options.service ?? "lambda";
  const credentials = credentialSource(options.credentials);
  return async (request) => {
    const creds = await credentials();
    const region = options.region ?? regionOf(request.url);
    const headers = new Headers(request.headers);
    headers.set("x-amz-content-sha256", await sha256Hex(request.body ?? ""));
    const signer = new AwsV4Signer({
      method: request.method,
      url: request.url,
      headers,
      body: (request.body || undefined) as RequestInit["body"],
      accessKeyId: creds.accessKeyId,
      secretAccessKey: creds.secretAccessKey,
      sessionToken: creds.sessionToken || undefined,
      service,
      region,
      datetime: now().toISOString().replace(/[:-]|\.\d{3}/g, ""),
    });
    return (await signer.sign()).headers;
  };
}

function credentialSource(given: SigV4Options["credentials"]): AwsCredentialsProvider {
  if (typeof given === "function") return given;
  if (given !== undefined) {
    if (!given.accessKeyId || !given.secretAccessKey) throw new Error("sigv4: credentials need accessKeyId and secretAccessKey");
    return async () => given;
  }
  if (typeof process === "undefined" || !process.versions?.node) {
    throw new Error("sigv4: pass credentials (a browser has no default credential provider chain)");
  }
  let chain: Promise<AwsCredentialsProvider> | undefined;
  return async () => {
    chain ??= loadDefaultChain();
    return (await chain)();
  };
}

async function loadDefaultChain(): Promise<AwsCredentialsProvider> {
  // A name in a variable: bundlers for the browser leave the import alone.
  const name = DEFAULT_CHAIN_MODULE;
  let mod: { defaultProvider?: () => AwsCredentialsProvider };
  try {
    mod = (await import(/* @vite-ignore */ name)) as typeof mod;
  } catch (err) {
    throw new Error(`sigv4: install ${name} for the default credential chain, or pass credentials`, { cause: err });
  }
  if (typeof mod.defaultProvider !== "function") throw new Error(`sigv4: ${name} has no defaultProvider`);
  return mod.defaultProvider();
}

/** The region a Lambda function URL's host names (`….lambda-url.<region>.on.aws`), if it is one. */
export function functionUrlRegion(url: string): string | undefined {
  return /^[^.]+\.lambda-url\.([a-z0-9-]+)\.on\.aws$/.exec(new URL(url).hostname)?.[1];
}

function regionOf(url: string): string {
  const host = new URL(url).hostname;
  const fromHost = functionUrlRegion(url);
  const fromEnv = typeof process === "undefined" ? undefined : process.env?.AWS_REGION || process.env?.AWS_DEFAULT_REGION;
  const region = fromHost ?? fromEnv;
  if (!region) throw new Error(`sigv4: no region for ${host}: pass sigv4.region`);
  return region;
}

async function sha256Hex(body: string | Uint8Array): Promise<string> {
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
