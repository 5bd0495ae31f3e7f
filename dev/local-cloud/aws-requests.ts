/**
 * What an AWS request asks IAM for: the actions and resource ARNs one DynamoDB, SQS or S3 API call
 * is authorized as (a transaction per contained action, a batch per table, a copy as a read of its
 * source and a write of its target), and who signed it (the access key id of its SigV4
 * credential, from the `Authorization` header, a presigned URL's query or a POST form's field).
 */

/** One authorization a request needs. */
export interface AuthorizationRequest {
  action: string;
  resource: string;
}

export interface ArnContext {
  region: string;
  account: string;
}

/** The access key id a request was signed with; undefined when it is unsigned. */
export function accessKeyOf(headers: Record<string, string | string[] | undefined>, url: URL, body?: Buffer): string | undefined {
  const auth = headers.authorization;
  const fromHeader = typeof auth === "string" ? /Credential=([^/,\s]+)\//.exec(auth)?.[1] : undefined;
  if (fromHeader) return fromHeader;
  const q = url.searchParams.get("X-Amz-Credential");
  if (q) return q.split("/")[0];
  if (body && String(headers["content-type"] ?? "").startsWith("multipart/form-data")) {
    return /name="x-amz-credential"\r\n\r\n([^/\r\n]+)\//i.exec(body.toString("latin1"))?.[1];
  }
  return undefined;
}

const tableArn = (name: string, c: ArnContext) => (name.startsWith("arn:") ? name : `arn:aws:dynamodb:${c.region}:${c.account}:table/${name}`);

/** A DynamoDB JSON request (`X-Amz-Target: DynamoDB_20120810.<Operation>`). */
export function dynamoAuthorizations(target: string, body: Record<string, any>, c: ArnContext): AuthorizationRequest[] {
  const op = target.split(".").pop()!;
  switch (op) {
    case "TransactWriteItems": {
      const kinds: Record<string, string> = { Put: "PutItem", Update: "UpdateItem", Delete: "DeleteItem", ConditionCheck: "ConditionCheckItem" };
      return ((body.TransactItems ?? []) as Array<Record<string, any>>).flatMap((item) =>
        Object.entries(item)
          .filter(([k]) => k in kinds)
          .map(([k, v]) => ({ action: `dynamodb:${kinds[k]}`, resource: tableArn(String(v.TableName), c) })),
      );
    }
    case "TransactGetItems":
      return ((body.TransactItems ?? []) as Array<Record<string, any>>).map((item) => ({ action: "dynamodb:GetItem", resource: tableArn(String(item.Get?.TableName), c) }));
    case "BatchGetItem":
    case "BatchWriteItem":
      return Object.keys(body.RequestItems ?? {}).map((table) => ({ action: `dynamodb:${op}`, resource: tableArn(table, c) }));
    default: {
      const table = body.TableName ?? body.TableArn;
      const base = table ? tableArn(String(table), c) : "*";
      return [{ action: `dynamodb:${op}`, resource: body.IndexName ? `${base}/index/${body.IndexName}` : base }];
    }
  }
}

/** SQS batch calls are authorized as their single-message action. */
const SQS_ACTION: Record<string, string> = {
  SendMessageBatch: "SendMessage",
  DeleteMessageBatch: "DeleteMessage",
  ChangeMessageVisibilityBatch: "ChangeMessageVisibility",
};

/** An SQS request, JSON (`X-Amz-Target: AmazonSQS.<Operation>`) or query (`Action=`). */
export function sqsAuthorizations(operation: string, params: { QueueUrl?: string; QueueName?: string; QueueOwnerAWSAccountId?: string }, c: ArnContext): AuthorizationRequest[] {
  const action = `sqs:${SQS_ACTION[operation] ?? operation}`;
  if (params.QueueUrl) {
    const [account, name] = new URL(params.QueueUrl).pathname.split("/").filter(Boolean).slice(-2);
    return [{ action, resource: `arn:aws:sqs:${c.region}:${account ?? c.account}:${name}` }];
  }
  if (params.QueueName) return [{ action, resource: `arn:aws:sqs:${c.region}:${params.QueueOwnerAWSAccountId ?? c.account}:${params.QueueName}` }];
  return [{ action, resource: "*" }];
}

/** A path-style S3 request (`/<bucket>/<key>`). */
export function s3Authorizations(method: string, url: URL, headers: Record<string, string | string[] | undefined>, body: Buffer): AuthorizationRequest[] {
  const [bucket, ...rest] = url.pathname.split("/").slice(1);
  if (!bucket) return [{ action: "s3:ListAllMyBuckets", resource: "*" }];
  const key = rest.map(decodeURIComponent).join("/");
  const q = url.searchParams;
  const object = (k: string) => `arn:aws:s3:::${bucket}/${k}`;
  const bucketArn = `arn:aws:s3:::${bucket}`;
  if (method === "OPTIONS") return [];
  if (!key) {
    if (method === "POST" && q.has("delete")) {
      const keys = [...body.toString("utf8").matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => xmlDecode(m[1]!));
      return keys.map((k) => ({ action: "s3:DeleteObject", resource: object(k) }));
    }
    if (method === "POST") {
      // A browser's form upload (a presigned POST): its key is a field of the form.
      const field = /name="key"\r\n\r\n([^\r\n]*)/i.exec(body.toString("latin1"))?.[1] ?? "";
      return [{ action: "s3:PutObject", resource: object(field) }];
    }
    if (method === "PUT") return [{ action: "s3:CreateBucket", resource: bucketArn }];
    if (method === "DELETE") return [{ action: "s3:DeleteBucket", resource: bucketArn }];
    if (q.has("location")) return [{ action: "s3:GetBucketLocation", resource: bucketArn }];
    if (q.has("uploads")) return [{ action: "s3:ListBucketMultipartUploads", resource: bucketArn }];
    return [{ action: "s3:ListBucket", resource: bucketArn }];
  }
  switch (method) {
    case "GET":
    case "HEAD":
      if (q.has("uploadId")) return [{ action: "s3:ListMultipartUploadParts", resource: object(key) }];
      if (q.has("tagging")) return [{ action: "s3:GetObjectTagging", resource: object(key) }];
      return [{ action: "s3:GetObject", resource: object(key) }];
    case "PUT": {
      const copy = headers["x-amz-copy-source"];
      const source = typeof copy === "string" ? decodeURIComponent(copy.split("?")[0]!).replace(/^\//, "") : undefined;
      if (q.has("tagging")) return [{ action: "s3:PutObjectTagging", resource: object(key) }];
      return [{ action: "s3:PutObject", resource: object(key) }, ...(source ? [{ action: "s3:GetObject", resource: `arn:aws:s3:::${source}` }] : [])];
    }
    case "POST":
      return [{ action: "s3:PutObject", resource: object(key) }];
    case "DELETE":
      return [{ action: q.has("uploadId") ? "s3:AbortMultipartUpload" : "s3:DeleteObject", resource: object(key) }];
    default:
      return [{ action: `s3:${method}`, resource: object(key) }];
  }
}

function xmlDecode(s: string): string {
  return s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, "&");
}
