/**
 * IAM in front of the emulators (ADR 0047): one signing-aware proxy per service (DynamoDB, SQS,
 * S3, and the Secrets Manager / SSM stand-in) through which every function of the local cloud
 * reaches AWS. Each function signs with an access key of its own, so the proxy knows which
 * function calls, as AWS knows the role from the credentials; it works out what the call is
 * authorized as (`aws-requests.ts`), evaluates each against that function's role policy from the
 * template with `@cloud-copilot/iam-simulate` (resource ARNs mapped to the local resources), and
 * refuses what the policy does not allow with the service's own AccessDenied answer before the
 * emulator sees it. A call with any other key (the test runner's, the event source's) is the
 * local cloud's own and passes unchecked.
 */
import { createServer, type IncomingMessage, request as httpRequest, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type ResolveContext, resolveIntrinsics } from "./cfn-intrinsics.ts";
import { accessKeyOf, type AuthorizationRequest, dynamoAuthorizations, s3Authorizations, sqsAuthorizations } from "./aws-requests.ts";
import type { LogSink } from "./function-host.ts";
import { type SecretsStandIn, startSecretsStandIn } from "./secrets-stand-in.ts";
import type { StackTemplate, TemplateFunction } from "./stack-template.ts";

/** One call a function made through the gate. */
export interface GatedCall {
  /** The function's logical id. */
  function: string;
  action: string;
  resource: string;
  allowed: boolean;
}

export interface IamGate {
  /** Every authorization asked, in order. */
  readonly calls: GatedCall[];
  /** The refused ones. */
  readonly denials: GatedCall[];
  /** What a function's environment needs to go through the gate (endpoints, its own key). */
  environmentFor(fn: TemplateFunction): Record<string, string>;
  /**
   * The calls allowed so far that a role without `action` would have been refused: each distinct
   * (function, action, resource) re-evaluated against its policies with that action taken out
   * (the least-privilege matrix, ADR 0048). Empty: nothing the cloud did needed the grant.
   */
  replayWithout(roleLogicalId: string, action: string): Promise<GatedCall[]>;
  /** The SSM parameters and Secrets Manager secrets the stand-in serves. */
  readonly secrets: SecretsStandIn;
  close(): Promise<void>;
}

export interface IamGateOptions {
  stack: StackTemplate;
  ctx: ResolveContext;
  log: LogSink;
  /** Values of the SSM parameters (by name) and secrets (by ARN or name) the functions read. */
  secrets?: Record<string, string>;
  /** The endpoints behind the gate; default the emulators' (`AWS_ENDPOINT_URL_*`). */
  upstream?: { dynamodb?: string; sqs?: string; s3?: string };
}

type Simulate = typeof import("@cloud-copilot/iam-simulate").runSimulation;
let simulator: Promise<Simulate> | undefined;
/** The evaluator, loaded on first use (an optional dependency of the local cloud). */
function loadSimulator(): Promise<Simulate> {
  return (simulator ??= import("@cloud-copilot/iam-simulate").then(
    (m) => m.runSimulation,
    (err: unknown) => {
      simulator = undefined;
      throw new Error(`the local cloud's IAM check needs @cloud-copilot/iam-simulate: npm install --save-dev @cloud-copilot/iam-simulate (${String(err)})`);
    },
  ));
}

interface Caller {
  fn: TemplateFunction;
  principal: string;
  policies: Array<{ name: string; policy: unknown }>;
}

export async function startIamGate(options: IamGateOptions): Promise<IamGate> {
  const simulate = await loadSimulator();
  const { stack, ctx } = options;
  const arnCtx = { region: ctx.region, account: ctx.account };
  const callers = new Map<string, Caller>();
  stack.functions.forEach((fn, i) => {
    const roleName = fn.roleLogicalId ? (ctx.resources.get(fn.roleLogicalId)?.ref ?? fn.roleLogicalId) : "none";
    const fnName = ctx.resources.get(fn.logicalId)?.ref ?? fn.logicalId;
    const policies = stack.policies
      .filter((p) => fn.roleLogicalId !== undefined && p.roles.includes(fn.roleLogicalId))
      .map((p) => ({ name: p.logicalId, policy: resolveIntrinsics(p.document, ctx) }));
    callers.set(`AKIALOCAL${String(i).padStart(11, "0")}`, { fn, principal: `arn:aws:sts::${ctx.account}:assumed-role/${roleName}/${fnName}`, policies });
  });
  const keyOf = new Map([...callers].map(([key, c]) => [c.fn.logicalId, key]));

  const calls: GatedCall[] = [];
  const denials: GatedCall[] = [];
  const decisions = new Map<string, Promise<boolean>>();
  const allowed = (caller: Caller, a: AuthorizationRequest): Promise<boolean> => {
    const cacheKey = `${caller.fn.logicalId}\n${a.action}\n${a.resource}`;
    let decision = decisions.get(cacheKey);
    if (!decision) {
      decision = simulate(
        {
          request: {
            principal: caller.principal,
            action: a.action,
            resource: { resource: a.resource, accountId: ctx.account },
            contextVariables: { "aws:SecureTransport": "true", "aws:RequestedRegion": ctx.region, "aws:PrincipalArn": caller.principal },
          },
          identityPolicies: caller.policies,
          serviceControlPolicies: [],
          resourceControlPolicies: [],
        },
        {},
      ).then((r) => r.resultType !== "error" && r.overallResult === "Allowed");
      if (decisions.size > 20_000) decisions.clear();
      decisions.set(cacheKey, decision);
    }
    return decision;
  };
  /** The first refused authorization of a call, if any. */
  const check = async (caller: Caller, asks: AuthorizationRequest[]): Promise<AuthorizationRequest | undefined> => {
    let refused: AuthorizationRequest | undefined;
    for (const a of asks) {
      const ok = await allowed(caller, a);
      const call = { function: caller.fn.logicalId, action: a.action, resource: a.resource, allowed: ok };
      calls.push(call);
      if (calls.length > 100_000) calls.splice(0, 50_000);
      if (!ok) {
        denials.push(call);
        options.log(`AccessDenied: ${caller.fn.logicalId} (${caller.fn.role}) may not ${a.action} on ${a.resource}`, "iam");
        refused ??= a;
      }
    }
    return refused;
  };
  const message = (caller: Caller, a: AuthorizationRequest) =>
    `User: ${caller.principal} is not authorized to perform: ${a.action} on resource: ${a.resource} because no identity-based policy allows the ${a.action} action`;

  const secrets = await startSecretsStandIn(options.secrets ?? {});
  const upstreams = {
    dynamodb: options.upstream?.dynamodb ?? process.env.AWS_ENDPOINT_URL_DYNAMODB,
    sqs: options.upstream?.sqs ?? process.env.AWS_ENDPOINT_URL_SQS,
    s3: options.upstream?.s3 ?? process.env.AWS_ENDPOINT_URL_S3,
    secrets: secrets.url,
  };
  const servers: Server[] = [];
  const listen = async (upstream: string | undefined, authorize: (req: IncomingMessage, url: URL, body: Buffer) => AuthorizationRequest[], deny: (res: ServerResponse, req: IncomingMessage, text: string) => void) => {
    if (!upstream) return undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        void (async () => {
          const body = Buffer.concat(chunks);
          const url = new URL(req.url ?? "/", "http://local");
          const caller = callers.get(accessKeyOf(req.headers, url, body) ?? "");
          if (caller) {
            let asks: AuthorizationRequest[];
            try {
              asks = authorize(req, url, body);
            } catch {
              asks = [];
            }
            const refused = await check(caller, asks);
            if (refused) return deny(res, req, message(caller, refused));
          }
          forward(upstream, req, body, res);
        })().catch((err: unknown) => {
          res.writeHead(500).end(String(err));
        });
      });
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  const jsonDeny = (extra: Record<string, string>) => (res: ServerResponse, _req: IncomingMessage, text: string) => {
    res.writeHead(400, { "content-type": "application/x-amz-json-1.0", ...extra });
    res.end(JSON.stringify({ __type: "com.amazon.coral.service#AccessDeniedException", message: text, Message: text }));
  };
  const target = (req: IncomingMessage) => String(req.headers["x-amz-target"] ?? "");
  const parse = (body: Buffer) => (body.length ? (JSON.parse(body.toString("utf8")) as Record<string, any>) : {});

  const dynamodb = await listen(upstreams.dynamodb, (req, _url, body) => dynamoAuthorizations(target(req), parse(body), arnCtx), jsonDeny({}));
  const sqs = await listen(
    upstreams.sqs,
    (req, _url, body) => {
      const t = target(req);
      if (t) return sqsAuthorizations(t.split(".").pop()!, parse(body), arnCtx);
      const form = new URLSearchParams(body.toString("utf8"));
      return sqsAuthorizations(form.get("Action") ?? "", { QueueUrl: form.get("QueueUrl") ?? undefined, QueueName: form.get("QueueName") ?? undefined }, arnCtx);
    },
    (res, req, text) => {
      if (target(req)) return jsonDeny({ "x-amzn-query-error": "AccessDenied;Sender" })(res, req, text);
      res.writeHead(403, { "content-type": "text/xml" });
      res.end(`<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>${xmlEscape(text)}</Message></Error><RequestId>local</RequestId></ErrorResponse>`);
    },
  );
  const s3 = await listen(
    upstreams.s3,
    (req, url, body) => s3Authorizations(req.method ?? "GET", url, req.headers, body),
    (res, req, text) => {
      res.writeHead(403, { "content-type": "application/xml" });
      res.end(req.method === "HEAD" ? undefined : `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code><Message>${xmlEscape(text)}</Message><RequestId>local</RequestId></Error>`);
    },
  );
  const secretsGate = await listen(
    upstreams.secrets,
    (req, _url, body) => {
      const t = target(req);
      const p = parse(body);
      if (t.startsWith("AmazonSSM.")) {
        const name = String(p.Name ?? "");
        return [{ action: `ssm:${t.slice("AmazonSSM.".length)}`, resource: name.startsWith("arn:") ? name : `arn:aws:ssm:${ctx.region}:${ctx.account}:parameter/${name.replace(/^\//, "")}` }];
      }
      const id = String(p.SecretId ?? "");
      return [{ action: `secretsmanager:${t.split(".").pop()}`, resource: id.startsWith("arn:") ? id : `arn:aws:secretsmanager:${ctx.region}:${ctx.account}:secret:${id}` }];
    },
    jsonDeny({}),
  );

  async function replayWithout(roleLogicalId: string, action: string): Promise<GatedCall[]> {
    const seen = new Set<string>();
    const refused: GatedCall[] = [];
    for (const call of calls) {
      const key = `${call.function}\n${call.action}\n${call.resource}`;
      if (!call.allowed || seen.has(key)) continue;
      seen.add(key);
      const caller = [...callers.values()].find((c) => c.fn.logicalId === call.function);
      if (!caller || caller.fn.roleLogicalId !== roleLogicalId) continue;
      const policies = caller.policies.map((p) => ({ name: p.name, policy: withoutAction(p.policy, action) }));
      const r = await simulate(
        {
          request: {
            principal: caller.principal,
            action: call.action,
            resource: { resource: call.resource, accountId: ctx.account },
            contextVariables: { "aws:SecureTransport": "true", "aws:RequestedRegion": ctx.region, "aws:PrincipalArn": caller.principal },
          },
          identityPolicies: policies,
          serviceControlPolicies: [],
          resourceControlPolicies: [],
        },
        {},
      );
      if (r.resultType === "error" || r.overallResult !== "Allowed") refused.push({ ...call, allowed: false });
    }
    return refused;
  }

  return {
    calls,
    denials,
    replayWithout,
    secrets,
    environmentFor(fn) {
      return {
        AWS_ACCESS_KEY_ID: keyOf.get(fn.logicalId) ?? "unknown",
        AWS_SECRET_ACCESS_KEY: "local",
        ...(dynamodb ? { AWS_ENDPOINT_URL_DYNAMODB: dynamodb } : {}),
        ...(sqs ? { AWS_ENDPOINT_URL_SQS: sqs } : {}),
        ...(s3 ? { AWS_ENDPOINT_URL_S3: s3 } : {}),
        ...(secretsGate ? { AWS_ENDPOINT_URL_SSM: secretsGate, AWS_ENDPOINT_URL_SECRETS_MANAGER: secretsGate } : {}),
      };
    },
    /** The SQS gate's origin, for queue URLs handed to functions. */
    get sqsOrigin() {
      return sqs;
    },
    async close() {
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
      for (const s of servers) s.closeAllConnections();
      await secrets.close();
    },
  } as IamGate;
}

function forward(upstream: string, req: IncomingMessage, body: Buffer, res: ServerResponse): void {
  const u = new URL(upstream);
  const out = httpRequest(
    { host: u.hostname, port: u.port, method: req.method, path: req.url, headers: req.headers },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  out.on("error", (err) => {
    if (!res.headersSent) res.writeHead(502);
    res.end(String(err));
  });
  res.on("close", () => out.destroy());
  out.end(body);
}

/** A policy document with `action` taken out of every statement (a statement left empty goes). */
function withoutAction(policy: unknown, action: string): unknown {
  const doc = policy as { Statement?: Array<{ Action?: string | string[] }> };
  const statements = (doc.Statement ?? []).flatMap((st) => {
    const actions = Array.isArray(st.Action) ? st.Action : st.Action ? [st.Action] : [];
    const kept = actions.filter((a) => a !== action);
    if (kept.length === actions.length) return [st];
    return kept.length === 0 ? [] : [{ ...st, Action: kept }];
  });
  return { ...doc, Statement: statements };
}

function xmlEscape(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
