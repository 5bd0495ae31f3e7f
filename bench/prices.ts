/**
 * AWS list prices the cost figures use: us-east-1, on demand, as published at the time of
 * writing (aws.amazon.com/lambda/pricing, /dynamodb/pricing/on-demand, /sqs/pricing,
 * /s3/pricing, /cloudwatch/pricing). Verify them on the pricing pages before relying on a figure.
 */
export const PRICES = {
  /** DynamoDB on-demand, per million write request units. */
  dynamoWriteMillion: 0.625,
  /** DynamoDB on-demand, per million read request units. */
  dynamoReadMillion: 0.125,
  /** DynamoDB standard table class storage, per GB-month (PITR adds $0.20 per GB-month). */
  dynamoStorageGbMonth: 0.25,
  dynamoPitrGbMonth: 0.2,
  /** SQS FIFO requests, per million (the first million a month are free per account). */
  sqsFifoMillion: 0.5,
  /** Lambda arm64, per GB-second and per million requests. */
  lambdaArmGbSecond: 0.0000133334,
  lambdaRequestMillion: 0.2,
  /** CloudWatch: standard-resolution alarm per month, custom metric per month, log ingestion per GB. */
  alarmMonth: 0.1,
  customMetricMonth: 0.3,
  logIngestGb: 0.5,
  /** S3 Standard storage per GB-month; PUT (and COPY, POST, LIST) requests per 1,000; GET (and HEAD) per 1,000. */
  s3GbMonth: 0.023,
  s3PutThousand: 0.005,
  s3GetThousand: 0.0004,
} as const;

/**
 * Amazon Bedrock AgentCore Runtime, us-east-1 list prices (the anchor of `bench cost`): CPU billed
 * for what is used (nothing while waiting on I/O), memory for the peak consumed (at least 128 MB)
 * per second, from the microVM's start to the session's end; a session ends after its idle
 * timeout (`idleRuntimeSessionTimeout`, default 900 s, minimum 60 s).
 */
export const AGENTCORE = {
  vcpuHour: 0.0895,
  gbHour: 0.00945,
  source: "aws.amazon.com/bedrock/agentcore/pricing; idle timeout: AgentCore Control API LifecycleConfiguration",
} as const;

export const PRICE_NOTE = "us-east-1 on-demand list prices as published at the time of writing, verify";
