import { type CfnResource, Stack, Validations } from "aws-cdk-lib";
import type { IConstruct } from "constructs";

/**
 * A policy resource as cdk-nag names it in an IAM5 finding (`AwsSolutions-IAM5[Resource::<this>]`):
 * the value resolved in its stack, a `Fn::Join` joined, a `Ref` written `<Id>`, a `Fn::GetAtt`
 * `<Id.Attr>`, a literal as it is. An acknowledgement built from the very value the policy holds
 * matches in an environment-agnostic stack (`<AWS::Region>`) and in one with a concrete account
 * and region (`eu-west-1`) alike.
 */
export function nagResourceName(scope: IConstruct, resource: unknown): string {
  const flat = (node: unknown): string => {
    if (node === undefined) return "";
    // cdk-nag shows Fn::Sub's `${X}` as `<X>`.
    if (typeof node === "string") return node.replace(/\$\{/g, "<").replace(/\}/g, ">");
    const o = node as Record<string, unknown>;
    if (Array.isArray(o["Fn::Join"])) {
      const [separator, parts] = o["Fn::Join"] as [string, unknown[]];
      return parts.map(flat).join(separator);
    }
    if (o["Fn::Sub"] !== undefined) return flat(o["Fn::Sub"]);
    if (Array.isArray(o["Fn::GetAtt"])) {
      const [id, attribute] = o["Fn::GetAtt"] as [unknown, unknown];
      return `<${flat(id)}.${flat(attribute)}>`;
    }
    if (o["Fn::ImportValue"] !== undefined) return flat(o["Fn::ImportValue"]);
    if (o.Ref !== undefined) return `<${flat(o.Ref)}>`;
    return JSON.stringify(node);
  };
  return flat(Stack.of(scope).resolve(resource));
}

/** The parts of a `Harness` whose cdk-nag (AwsSolutions) findings are accepted on purpose. */
export interface HarnessNagTargets {
  bucket: IConstruct & { node: { defaultChild?: IConstruct } };
  /** Access logging is on when the user gave a log bucket; then S1 is not acknowledged. */
  bucketAccessLogs: boolean;
  functions: IConstruct[];
  roles: IConstruct[];
  /** The functions trace to X-Ray (`tracing.xray`): their roles may write traces. */
  xray?: boolean;
  /** The worker's role and the default (wildcard) Bedrock resources it holds, when it does. */
  bedrockDefaultGrant?: { role: IConstruct; resources: readonly string[] };
  api?: {
    restApi: IConstruct;
    stage: IConstruct;
    methods: IConstruct[];
    preflightMethods: IConstruct[];
    /** `POST /callbacks/{callbackId}`, open at the API (the construct's `callbacks`). */
    callbackMethod?: IConstruct;
    webAcl: boolean;
    cognito: boolean;
    /** The stage writes access logs (`apiGateway.accessLogs`). */
    accessLogs: boolean;
    /**
     * The API authorizes nothing (`urlAuthType: NONE`, no authorizer) and the app authenticates
     * every request: users' JWTs (`auth`), or the operator's bearer token.
     */
    appAuthenticates?: "jwt" | "bearerToken";
  };
}

/**
 * Acknowledges, with reasons, the AwsSolutions findings the harness accepts by design. Each
 * acknowledgement names one rule (and for IAM5 one finding) on one construct, so a new finding
 * still fails `cdk synth`.
 */
export function acknowledgeHarnessFindings(targets: HarnessNagTargets): void {
  const stack = Stack.of(targets.bucket);
  const bucketArn = `<${stack.resolve((targets.bucket.node.defaultChild as CfnResource).logicalId)}.Arn>`;

  if (!targets.bucketAccessLogs) {
    Validations.of(targets.bucket).acknowledge({
      id: "AwsSolutions-S1",
      reason:
        "Private bucket used only by the harness's own roles (spilled payloads, attachments). Server access logs need a second bucket that costs storage in an idle deployment; pass `accessLogsBucket` or enable CloudTrail S3 data events where an audit trail is required.",
    });
  }
  for (const role of targets.roles) {
    Validations.of(role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${bucketArn}/*]`,
      reason:
        "Object keys are content digests computed at run time, so objects cannot be listed in the policy; the grant is GetObject/PutObject on the harness bucket only.",
    });
    Validations.of(role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::${bucketArn}/uploads/*]`,
      reason:
        "Direct uploads (ADR 0034) are staged under uploads/<random id>-<digest>, named at run time; DeleteObject is granted under that prefix only, to remove a staged upload once verified.",
    });
    for (const prefix of ["blobs", "checkpoints"]) {
      Validations.of(role).acknowledge({
        id: `AwsSolutions-IAM5[Resource::${bucketArn}/${prefix}/*]`,
        reason:
          "Deleting a conversation (ADR 0034, the HTTP function only) deletes its content-addressed blobs and its checkpoint, whose keys are digests and conversation ids known at run time.",
      });
    }
  }
  if (targets.xray) {
    for (const role of targets.roles) {
      Validations.of(role).acknowledge({
        id: "AwsSolutions-IAM5[Resource::*]",
        reason:
          "Lambda's active tracing grants xray:PutTraceSegments and xray:PutTelemetryRecords, which have no resource-level permissions (`tracing.xray`).",
      });
    }
  }
  for (const fn of targets.functions) {
    Validations.of(fn).acknowledge({
      id: "AwsSolutions-L1",
      reason:
        "The harness deliberately targets nodejs22.x (DESIGN §5): the test suite and the embedded shape run on Node 22, and a runtime upgrade is a tested change, not a drift.",
    });
  }
  if (targets.bedrockDefaultGrant) {
    const { role, resources } = targets.bedrockDefaultGrant;
    for (const resource of resources) {
      Validations.of(role).acknowledge({
        id: `AwsSolutions-IAM5[Resource::${nagResourceName(role, resource)}]`,
        reason:
          "Agents choose their Bedrock model at run time; only InvokeModel(WithResponseStream) is granted. Narrow it with `bedrock.resources`.",
      });
    }
  }
  if (targets.api) {
    Validations.of(targets.api.restApi).acknowledge({
      id: "AwsSolutions-APIG2",
      reason: "A proxy API: the Hono app validates every request body and parameter itself (JSON Schema).",
    });
    Validations.of(targets.api.stage).acknowledge({
      id: "AwsSolutions-APIG6",
      reason:
        "Execution logging needs the account-wide API Gateway CloudWatch role, an account setting this stack does not own; the function logs every request (and `apiGateway.accessLogs` adds the stage's access logs).",
    });
    if (!targets.api.accessLogs) {
      Validations.of(targets.api.stage).acknowledge({
        id: "AwsSolutions-APIG1",
        reason:
          "Access logging needs the account-wide API Gateway CloudWatch role, unset in new accounts, where it would fail the deployment (ADR 0044); the http function logs every request. Set the role and pass `apiGateway.accessLogs: true`.",
      });
    }
    if (!targets.api.webAcl) {
      Validations.of(targets.api.stage).acknowledge({
        id: "AwsSolutions-APIG3",
        reason: "A WAF web ACL has a monthly fee even when idle; pass `apiGateway.webAclArn` to associate one.",
      });
    }
    for (const method of targets.api.preflightMethods) {
      for (const id of ["AwsSolutions-APIG4", "AwsSolutions-COG4"]) {
        Validations.of(method).acknowledge({
          id,
          reason: "A CORS preflight (mock integration, reaches no function): browsers send preflights without credentials.",
        });
      }
    }
    if (targets.api.callbackMethod) {
      for (const id of ["AwsSolutions-APIG4", "AwsSolutions-COG4"]) {
        Validations.of(targets.api.callbackMethod).acknowledge({
          id,
          reason:
            "The callback route (construct prop `callbacks`): third parties answering a callback carry its own bearer token, which the http function checks; they have no AWS credentials or user pool identity.",
        });
      }
    }
    const appAuthenticates = targets.api.appAuthenticates;
    if (appAuthenticates) {
      // Unguarded at the API only because the app guards it: the construct refuses this
      // combination without a token or `auth` (checkFrontDoor).
      for (const method of targets.api.methods) {
        Validations.of(method).acknowledge({
          id: "AwsSolutions-APIG4",
          reason:
            appAuthenticates === "jwt"
              ? "`auth.jwt`: a REST API has no JWT authorizer, so the http function verifies every request's JWT (issuer, audience, signature by the issuer's keys) before anything else, then authorizes it (ADR 0045); the API passes requests through."
              : "`urlAuthType: NONE` with `HARNESS_BEARER_TOKEN`: the http function checks the bearer token on every request before anything else; the API passes requests through.",
        });
      }
    }
    if (!targets.api.cognito) {
      for (const method of targets.api.methods) {
        Validations.of(method).acknowledge({
          id: "AwsSolutions-COG4",
          reason:
            appAuthenticates === "jwt"
              ? "`auth.jwt`: users' tokens come from an OIDC issuer that is not a Cognito user pool; the http function verifies them (ADR 0045)."
              : appAuthenticates === "bearerToken"
                ? "The http function checks a bearer token (`HARNESS_BEARER_TOKEN`) on every request; no user pool is involved."
                : "Methods use IAM authorization by default, or the authorizer given in `apiGateway.authorizer`.",
        });
      }
    }
  }
}
