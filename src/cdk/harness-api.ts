import type { Duration, RemovalPolicy } from "aws-cdk-lib";
import {
  AccessLogFormat,
  AuthorizationType,
  type CfnMethod,
  EndpointType,
  type IAuthorizer,
  LambdaIntegration,
  LogGroupLogDestination,
  type Method,
  ResponseTransferMode,
  RestApi,
} from "aws-cdk-lib/aws-apigateway";
import { Grant, type IGrantable } from "aws-cdk-lib/aws-iam";
import { CfnWebACLAssociation } from "aws-cdk-lib/aws-wafv2";
import type { IFunction } from "aws-cdk-lib/aws-lambda";
import { LogGroup, type RetentionDays } from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";

/** Options of the API Gateway in front of the http function (`HarnessProps.apiGateway`). */
export interface HarnessApiGatewayOptions {
  /**
   * Authorizer of every route (Cognito user pool, Lambda token/request authorizer).
   * @default IAM authorization when the harness's `urlAuthType` is `AWS_IAM`, none otherwise
   */
  readonly authorizer?: IAuthorizer;
  /**
   * Steady-state request rate of the stage, requests per second.
   * @default 50
   */
  readonly throttlingRateLimit?: number;
  /**
   * Burst of the stage, requests.
   * @default 100
   */
  readonly throttlingBurstLimit?: number;
  /** @default "v1" */
  readonly stageName?: string;
  /**
   * ARN of a regional AWS WAFv2 web ACL to associate with the stage.
   * @default no web ACL
   */
  readonly webAclArn?: string;
  /**
   * Access logs of the stage (one JSON line per request, standard fields) in a log group of their
   * own. API Gateway writes a REST API's logs with the account's API Gateway CloudWatch role, an
   * account-wide setting per region this stack does not own: where it is unset (new accounts),
   * the deployment fails ("CloudWatch Logs role ARN must be set in account settings"). Set it once
   * (`aws apigateway update-account --patch-operations op=replace,path=/cloudwatchRoleArn,value=<role ARN>`,
   * a role trusting `apigateway.amazonaws.com` with `AmazonAPIGatewayPushToCloudWatchLogs`), then
   * turn this on (ADR 0044). Without it the http function still logs every request.
   *
   * Cost: CloudWatch Logs ingestion ($0.50 per GB) per request logged, storage as `logRetention`.
   * @default false
   */
  readonly accessLogs?: boolean;
}

/** @internal Built by `Harness`; not meant to be used alone. */
export interface HarnessApiProps extends HarnessApiGatewayOptions {
  readonly handler: IFunction;
  /** The http function's timeout: a stream may last that long. */
  readonly integrationTimeout: Duration;
  readonly defaultAuthorization: "IAM" | "NONE";
  readonly logRetention: RetentionDays;
  readonly removalPolicy: RemovalPolicy;
  /** Origins whose preflights the API answers (unauthenticated OPTIONS methods). */
  readonly corsOrigins?: readonly string[];
  /** Request headers the preflights allow. */
  readonly corsAllowedHeaders?: readonly string[];
  /**
   * Open `POST /callbacks/{callbackId}` without the API's authorization (the app checks the
   * callback token: the construct's `callbacks`).
   */
  readonly openCallbacks?: boolean;
  /** OAuth scopes a Cognito `authorizer` requires on the methods it guards (the construct's `auth.cognito.scopes`). */
  readonly authorizationScopes?: readonly string[];
}

/**
 * A regional REST API proxying every path to the http function with response streaming
 * (`ResponseTransferMode.STREAM`, the Lambda `response-streaming-invocations` endpoint), so
 * admission and the SSE stream keep one base URL and the same streaming handler serves both the
 * function URL (payload v2) and this API (payload v1). HTTP APIs buffer responses, which is why
 * this is a REST API.
 */
export class HarnessApi extends Construct {
  readonly restApi: RestApi;
  readonly stageName: string;
  /** The methods (root and proxy, `ANY`). */
  readonly methods: Method[];
  /** The CORS preflight methods (root and proxy, `OPTIONS`, no auth), when `corsOrigins` is set. */
  readonly preflightMethods: Method[];
  /** `POST /callbacks/{callbackId}` without the API's authorization, when `openCallbacks` is set. */
  readonly callbackMethod?: Method;
  /** The authorizer of `methods`, when one is given (`apiGateway.authorizer`, or the Cognito one of the construct's `auth.cognito`). */
  readonly authorizer?: IAuthorizer;

  constructor(scope: Construct, id: string, props: HarnessApiProps) {
    super(scope, id);
    this.stageName = props.stageName ?? "v1";
    // Opt-in: logging needs the account's API Gateway CloudWatch role (ADR 0044).
    const accessLogs = props.accessLogs
      ? new LogGroup(this, "AccessLogs", { retention: props.logRetention, removalPolicy: props.removalPolicy })
      : undefined;
    const methodAuth = props.authorizer
      ? { authorizer: props.authorizer, authorizationType: props.authorizer.authorizationType }
      : { authorizationType: props.defaultAuthorization === "IAM" ? AuthorizationType.IAM : AuthorizationType.NONE };

    this.restApi = new RestApi(this, "RestApi", {
      description: "Resolute harness: admission and SSE streams",
      endpointTypes: [EndpointType.REGIONAL],
      // The account-wide API Gateway logging role is an account setting, not this stack's.
      cloudWatchRole: false,
      deployOptions: {
        stageName: this.stageName,
        throttlingRateLimit: props.throttlingRateLimit ?? 50,
        throttlingBurstLimit: props.throttlingBurstLimit ?? 100,
        ...(accessLogs
          ? { accessLogDestination: new LogGroupLogDestination(accessLogs), accessLogFormat: AccessLogFormat.jsonWithStandardFields() }
          : {}),
      },
      defaultMethodOptions: methodAuth,
      // Every request body reaches the function base64-encoded (isBase64Encoded), which the
      // handler decodes: an attachment's bytes (POST /attachments) arrive as sent. Without it
      // API Gateway passes bodies as UTF-8 text and mangles any byte sequence that is not.
      binaryMediaTypes: ["*/*"],
      // A browser cannot sign or authorize a preflight: the API answers it (a mock OPTIONS method
      // without auth); the app adds the CORS headers of the real responses.
      ...(props.corsOrigins
        ? {
            defaultCorsPreflightOptions: {
              allowOrigins: [...props.corsOrigins],
              allowMethods: ["GET", "POST"],
              allowHeaders: [...(props.corsAllowedHeaders ?? [])],
            },
          }
        : {}),
      defaultIntegration: new LambdaIntegration(props.handler, {
        responseTransferMode: ResponseTransferMode.STREAM,
        timeout: props.integrationTimeout,
      }),
    });
    const rootMethod = this.restApi.root.addMethod("ANY");
    const proxy = this.restApi.root.addProxy({ anyMethod: true });
    this.methods = [rootMethod, proxy.anyMethod!];
    this.authorizer = props.authorizer;
    // On these methods only: in the default method options they would reach the preflights and
    // the callback route too, where CDK drops them with a warning (no authorizer there).
    if (props.authorizationScopes && props.authorizationScopes.length > 0) {
      for (const method of this.methods) (method.node.defaultChild as CfnMethod).addPropertyOverride("AuthorizationScopes", [...props.authorizationScopes]);
    }
    // Third parties answering callbacks carry the callback token, not AWS credentials or the
    // authorizer's identity: this one route is open at the API and checked by the app.
    const callbacks = props.openCallbacks ? this.restApi.root.addResource("callbacks") : undefined;
    const callback = callbacks?.addResource("{callbackId}");
    this.callbackMethod = callback?.addMethod("POST", undefined, { authorizationType: AuthorizationType.NONE });
    this.preflightMethods = [this.restApi.root, proxy, ...(callbacks && callback ? [callbacks, callback] : [])]
      .map((resource) => resource.node.tryFindChild("OPTIONS"))
      .filter((method): method is Method => method !== undefined);
    // With `*/*` binary, a preflight's mock integration fails (500, "Unable to transform
    // request") unless it converts the request and its empty response to text.
    for (const method of this.preflightMethods) {
      const cfn = method.node.defaultChild as CfnMethod;
      cfn.addPropertyOverride("Integration.ContentHandling", "CONVERT_TO_TEXT");
      cfn.addPropertyOverride("Integration.IntegrationResponses.0.ContentHandling", "CONVERT_TO_TEXT");
    }
    if (props.webAclArn) {
      new CfnWebACLAssociation(this, "WebAcl", {
        resourceArn: this.restApi.deploymentStage.stageArn,
        webAclArn: props.webAclArn,
      });
    }
  }

  /** Let `grantee` call every route of the stage (IAM authorization). */
  grantInvoke(grantee: IGrantable): Grant {
    return Grant.addToPrincipal({
      grantee,
      actions: ["execute-api:Invoke"],
      resourceArns: [this.restApi.arnForExecuteApi("*", "/*", this.stageName)],
    });
  }
}
