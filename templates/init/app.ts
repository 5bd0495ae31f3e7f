/**
 * The CDK app: `npx cdk synth` (offline) writes the template and the function bundles to cdk.out/,
 * `npx cdk deploy` deploys them: Lambda + DynamoDB + SQS FIFO + S3, nothing running while idle.
 * The construct's props (retention, alarms, CORS, Bedrock, …) are documented in its TSDoc.
 */
import { App, CfnOutput, Stack } from "aws-cdk-lib";
import { Harness } from "resolute-harness/cdk";

const app = new App();
const stack = new Stack(app, "__STACK__");
const harness = new Harness(stack, "Harness", {
  agentsEntry: "agents.ts",
  // Let the worker call Bedrock, and set MODEL=amazon-bedrock/<model id> in `environment`:
  // bedrock: true,
  // environment: { MODEL: "amazon-bedrock/<model id>" },
});
new CfnOutput(stack, "Url", { value: harness.url });
