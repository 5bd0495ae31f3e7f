/**
 * What each function's role may do with the harness's resources: one policy statement (with a
 * stable `sid`) per kind of access, granted by the construct to the roles that use it. Every
 * grant here is one a code path of that role needs (issue 35 removed the rest); a synth test pins
 * each role's exact actions.
 */
import { Stack } from "aws-cdk-lib";
import type { TableV2 } from "aws-cdk-lib/aws-dynamodb";
import { type IGrantable, PolicyStatement } from "aws-cdk-lib/aws-iam";
import type { Bucket } from "aws-cdk-lib/aws-s3";
import type { Queue } from "aws-cdk-lib/aws-sqs";
import type { HarnessBedrockOptions } from "./harness-props.ts";
import { HARNESS_TABLE } from "../dynamodb/table.ts";
import { HARNESS_TABLE_SCHEMA } from "./table-schema.ts";

/** The index only the console reads. */
const CONSOLE_INDEX = HARNESS_TABLE.indexes.byActivity.indexName;

/** The grants over one harness's table, bucket and work queue. */
export class HarnessGrants {
  readonly #resources: { table: TableV2; bucket: Bucket; queue: Queue };
  constructor(resources: { table: TableV2; bucket: Bucket; queue: Queue }) {
    this.#resources = resources;
  }

  /** Item-level reads and conditional writes on the table and its indexes. */
  tableData(grantee: IGrantable): void {
    // Item-level reads and conditional writes (transactions are authorized per contained
    // action). Only a conversation's deletion deletes items (`deletion`, the HTTP function).
    // A head move that leaves a session idle checks that no member was written past the last
    // admission it read (a ConditionCheck, ADR 0035): every function settles or moves heads.
    // No Scan, no BatchWriteItem outside deletion (records are never batch-written, DESIGN
    // §3.1), no table or backup administration.
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        sid: "HarnessTableData",
        actions: [
          "dynamodb:GetItem",
          "dynamodb:BatchGetItem",
          "dynamodb:Query",
          "dynamodb:PutItem",
          "dynamodb:UpdateItem",
          "dynamodb:ConditionCheckItem",
        ],
        resources: [
          this.#resources.table.tableArn,
          ...HARNESS_TABLE_SCHEMA.globalSecondaryIndexes
            .filter((index) => index.indexName !== CONSOLE_INDEX)
            .map((index) => `${this.#resources.table.tableArn}/index/${index.indexName}`),
        ],
      }),
    );
  }

  /**
   * The console's listing across agents and instances (ADR 0054): a Query of the activity index,
   * which only the HTTP function (the operator's console and its API) reads.
   */
  consoleListing(grantee: IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        sid: "HarnessConsoleListing",
        actions: ["dynamodb:Query"],
        resources: [`${this.#resources.table.tableArn}/index/${CONSOLE_INDEX}`],
      }),
    );
  }

  objects(grantee: IGrantable): void {
    // Content-addressed objects are written once and read back, log checkpoints (`checkpoints/`,
    // ADR 0018) rewritten in place; nothing deletes them (the lifecycle rule does, when
    // configured: an expired checkpoint only means a rebuild from the whole log). ListBucket
    // turns a missing object into 404, not 403.
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        sid: "HarnessObjects",
        actions: ["s3:GetObject", "s3:PutObject"],
        resources: [this.#resources.bucket.arnForObjects("*")],
      }),
    );
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({ sid: "HarnessBucketList", actions: ["s3:ListBucket"], resources: [this.#resources.bucket.bucketArn] }),
    );
  }

  /** A direct upload's staged object is deleted once it is verified and stored (ADR 0034). */
  stagedUploadDeletion(grantee: IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({ sid: "HarnessUploadsDelete", actions: ["s3:DeleteObject"], resources: [this.#resources.bucket.arnForObjects("uploads/*")] }),
    );
  }

  /** Sending doorbells to the work queue (its URL comes from QUEUE_URL: no GetQueueUrl). */
  ring(grantee: IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({ sid: "HarnessQueueSend", actions: ["sqs:SendMessage"], resources: [this.#resources.queue.queueArn] }),
    );
  }

  /**
   * Deleting a conversation (`DELETE /agents/:agent/:instance`, ADR 0034) runs in the HTTP
   * function, and in the sweeper when `conversationRetention` is set: they alone may delete
   * items and content-addressed objects and checkpoints. Items go in BatchWriteItem delete
   * requests, authorized as `dynamodb:BatchWriteItem` alone (src/dynamodb/deletion.ts); no code
   * sends DeleteItem or a transaction's Delete, which would need `dynamodb:DeleteItem`.
   */
  deletion(grantee: IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        sid: "HarnessConversationDeletion",
        actions: ["dynamodb:BatchWriteItem"],
        resources: [this.#resources.table.tableArn],
      }),
    );
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        sid: "HarnessConversationObjectsDelete",
        actions: ["s3:DeleteObject"],
        resources: [this.#resources.bucket.arnForObjects("blobs/*"), this.#resources.bucket.arnForObjects("checkpoints/*")],
      }),
    );
  }

  /** Bedrock invocation (the worker, with `bedrock`); returns the resources granted. */
  bedrock(grantee: IGrantable, options: HarnessBedrockOptions): readonly string[] {
    const stack = Stack.of(this.#resources.table);
    // Foundation models in every region (a cross-region inference profile routes to others), and
    // this account's system-defined and application inference profiles in this region.
    const resources = options.resources ?? [
      `arn:${stack.partition}:bedrock:*::foundation-model/*`,
      `arn:${stack.partition}:bedrock:${stack.region}:${stack.account}:inference-profile/*`,
      `arn:${stack.partition}:bedrock:${stack.region}:${stack.account}:application-inference-profile/*`,
    ];
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        sid: "HarnessBedrockInvoke",
        actions: ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
        resources,
      }),
    );
    return resources;
  }
}
