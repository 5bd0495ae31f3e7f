/**
 * Provider SDKs' hidden retries (issue 15, ADR 0019): pi-ai's Bedrock client (the AWS SDK's) makes
 * 3 requests per call by itself unless `AWS_MAX_ATTEMPTS` says otherwise, the lever the construct
 * sets on the functions that run agents. Against a local server answering Bedrock's 500, through
 * pi-ai's own Bedrock provider code. And the harness's own SQS client keeps its attempts whatever
 * the variable says.
 */
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { bedrockConverseStreamApi } from "@earendil-works/pi-ai/api/bedrock-converse-stream.lazy";
import { createModels, createProvider, type Api, type Model } from "@earendil-works/pi-ai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SQS_MAX_ATTEMPTS, sqsClient } from "../../src/lambda/wiring.ts";

let server: Server;
let requests = 0;
let url = "";
const saved = process.env.AWS_MAX_ATTEMPTS;

beforeAll(async () => {
  server = createServer((req, res) => {
    requests++;
    req.resume();
    res.writeHead(500, { "content-type": "application/json", "x-amzn-errortype": "InternalServerException" });
    res.end(JSON.stringify({ message: "scripted failure" }));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
afterEach(() => {
  if (saved === undefined) delete process.env.AWS_MAX_ATTEMPTS;
  else process.env.AWS_MAX_ATTEMPTS = saved;
});

/** One model call through pi-ai's Bedrock provider code; the requests it made. */
async function callOnce(): Promise<{ requests: number; stopReason: string }> {
  const model: Model<Api> = {
    id: "anthropic.claude-scripted",
    name: "scripted Bedrock",
    api: "bedrock-converse-stream",
    provider: "scripted-bedrock",
    baseUrl: url,
    reasoning: false,
    input: ["text"],
    cost: { input: 3, output: 15, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 200_000,
    maxTokens: 1_000,
  };
  const models = createModels();
  models.setProvider(
    createProvider({
      id: "scripted-bedrock",
      auth: { apiKey: { name: "none", resolve: async () => ({ auth: { apiKey: "" } }) } },
      models: [model],
      api: { "bedrock-converse-stream": bedrockConverseStreamApi() },
    }),
  );
  const before = requests;
  // No credentials (a proxy's mode), HTTP/1.1 for the local server.
  const env = { AWS_BEDROCK_SKIP_AUTH: "1", AWS_BEDROCK_FORCE_HTTP1: "1", AWS_REGION: "us-east-1" };
  const stream = await models.streamSimple(model, { messages: [{ role: "user", content: "hi", timestamp: 0 }] } as never, { env } as never);
  const result = await stream.result();
  return { requests: requests - before, stopReason: result.stopReason };
}

describe("provider SDK retries", () => {
  it("pi-ai's Bedrock client retries by itself (3 requests) unless AWS_MAX_ATTEMPTS=1 (1 request: the harness's budget is the only one)", async () => {
    delete process.env.AWS_MAX_ATTEMPTS;
    expect(await callOnce()).toEqual({ requests: 3, stopReason: "error" });
    process.env.AWS_MAX_ATTEMPTS = "1";
    expect(await callOnce()).toEqual({ requests: 1, stopReason: "error" });
  });

  it("the harness's SQS client keeps its attempts whatever AWS_MAX_ATTEMPTS says", async () => {
    process.env.AWS_MAX_ATTEMPTS = "1";
    const client = sqsClient();
    expect(await client.config.maxAttempts()).toBe(SQS_MAX_ATTEMPTS);
    client.destroy();
  });
});
