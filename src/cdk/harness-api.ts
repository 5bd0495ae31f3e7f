import type { Duration, RemovalPolicy } from "aws-cdk-lib";
import {
  AccessLogFormat,
  AuthorizationType,
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

  constructor(scope: Construct, id: string, props: HarnessApiProps) {
    super(scope, id);
    this.stageName = props.stageName ?? "v1";
    const accessLogs = new LogGroup(this, "AccessLogs", {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
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
        accessLogDestination: new LogGroupLogDestination(accessLogs),
        accessLogFormat: AccessLogFormat.jsonWithStandardFields(),
      },
      defaultMethodOptions: methodAuth,
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
    // Third parties answering callbacks carry the callback token, not AWS credentials or the
    // authorizer's identity: this one route is open at the API and checked by the app.
    const callbacks = props.openCallbacks ? this.restApi.root.addResource("callbacks") : undefined;
    const callback = callbacks?.addResource("{callbackId}");
    this.callbackMethod = callback?.addMethod("POST", undefined, { authorizationType: AuthorizationType.NONE });
    this.preflightMethods = [this.restApi.root, proxy, ...(callbacks && callback ? [callbacks, callback] : [])]
      .map((resource) => resource.node.tryFindChild("OPTIONS"))
      .filter((method): method is Method => method !== undefined);
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
