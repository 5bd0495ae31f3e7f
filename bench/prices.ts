/**
 * AWS list prices the cost figures use: us-east-1, on demand, as published at the time of
 * writing. Verify them on the pricing pages before relying on a figure.
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
  /** S3 Standard storage per GB-month. */
  s3GbMonth: 0.023,
} as const;

export const PRICE_NOTE = "us-east-1 on-demand list prices as published at the time of writing, verify";
