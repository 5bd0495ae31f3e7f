import { describe, expect, it } from "vitest";
import { accessKeyOf, dynamoAuthorizations, s3Authorizations, sqsAuthorizations } from "../../../../dev/local-cloud/aws-requests.ts";

const c = { region: "us-east-1", account: "000000000000" };
const table = "arn:aws:dynamodb:us-east-1:000000000000:table/t";

describe("what an AWS request is authorized as (the IAM gate)", () => {
  it("a transaction as each contained action, a query on an index as the index, a batch per table", () => {
    expect(
      dynamoAuthorizations("DynamoDB_20120810.TransactWriteItems", { TransactItems: [{ Put: { TableName: "t" } }, { ConditionCheck: { TableName: "t" } }, { Update: { TableName: "t" } }, { Delete: { TableName: "t" } }] }, c),
    ).toEqual([
      { action: "dynamodb:PutItem", resource: table },
      { action: "dynamodb:ConditionCheckItem", resource: table },
      { action: "dynamodb:UpdateItem", resource: table },
      { action: "dynamodb:DeleteItem", resource: table },
    ]);
    expect(dynamoAuthorizations("DynamoDB_20120810.Query", { TableName: "t", IndexName: "byStatus" }, c)).toEqual([{ action: "dynamodb:Query", resource: `${table}/index/byStatus` }]);
    expect(dynamoAuthorizations("DynamoDB_20120810.BatchWriteItem", { RequestItems: { t: [] } }, c)).toEqual([{ action: "dynamodb:BatchWriteItem", resource: table }]);
  });

  it("SQS batches as their single action, the queue's ARN from its URL", () => {
    expect(sqsAuthorizations("SendMessageBatch", { QueueUrl: "http://127.0.0.1:1/000000000000/q.fifo" }, c)).toEqual([{ action: "sqs:SendMessage", resource: "arn:aws:sqs:us-east-1:000000000000:q.fifo" }]);
  });

  it("S3: a copy reads its source, a multi-delete deletes each key, a form upload writes its key", () => {
    const url = (p: string) => new URL(p, "http://local");
    expect(s3Authorizations("PUT", url("/b/blobs/x"), { "x-amz-copy-source": "/b/uploads/y" }, Buffer.alloc(0))).toEqual([
      { action: "s3:PutObject", resource: "arn:aws:s3:::b/blobs/x" },
      { action: "s3:GetObject", resource: "arn:aws:s3:::b/uploads/y" },
    ]);
    expect(s3Authorizations("POST", url("/b?delete"), {}, Buffer.from("<Delete><Object><Key>blobs/a</Key></Object><Object><Key>blobs/b&amp;c</Key></Object></Delete>"))).toEqual([
      { action: "s3:DeleteObject", resource: "arn:aws:s3:::b/blobs/a" },
      { action: "s3:DeleteObject", resource: "arn:aws:s3:::b/blobs/b&c" },
    ]);
    const form = Buffer.from('--x\r\nContent-Disposition: form-data; name="key"\r\n\r\nuploads/u1\r\n--x\r\nContent-Disposition: form-data; name="X-Amz-Credential"\r\n\r\nAKIALOCAL1/20261207/us-east-1/s3/aws4_request\r\n--x--');
    expect(s3Authorizations("POST", url("/b"), { "content-type": "multipart/form-data; boundary=x" }, form)).toEqual([{ action: "s3:PutObject", resource: "arn:aws:s3:::b/uploads/u1" }]);
    expect(accessKeyOf({ "content-type": "multipart/form-data; boundary=x" }, url("/b"), form)).toBe("AKIALOCAL1");
    expect(s3Authorizations("GET", url("/b?list-type=2"), {}, Buffer.alloc(0))).toEqual([{ action: "s3:ListBucket", resource: "arn:aws:s3:::b" }]);
  });

  it("the caller's key from the Authorization header or a presigned URL", () => {
    expect(accessKeyOf({ authorization: "AWS4-HMAC-SHA256 Credential=AKIA1/20261207/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=x" }, new URL("http://l/"))).toBe("AKIA1");
    expect(accessKeyOf({}, new URL("http://l/b/k?X-Amz-Credential=AKIA2%2F20261207%2Fus-east-1%2Fs3%2Faws4_request"))).toBe("AKIA2");
  });
});
