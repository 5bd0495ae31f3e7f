import { AttributeType, type GlobalSecondaryIndexPropsV2, ProjectionType } from "aws-cdk-lib/aws-dynamodb";
import { HARNESS_TABLE } from "../dynamodb/table.ts";

/**
 * The table's key schema in CDK terms, derived from the DynamoDB adapter's own definition
 * (`HARNESS_TABLE`, docs/adr/0005-dynamodb-table-design.md), so the deployed table and the one
 * the adapter's tests create cannot drift apart. Every key attribute is a string.
 */
export const HARNESS_TABLE_SCHEMA: {
  partitionKey: { name: string; type: AttributeType };
  sortKey: { name: string; type: AttributeType };
  globalSecondaryIndexes: GlobalSecondaryIndexPropsV2[];
  timeToLiveAttribute?: string;
} = {
  partitionKey: { name: HARNESS_TABLE.partitionKey, type: AttributeType.STRING },
  sortKey: { name: HARNESS_TABLE.sortKey, type: AttributeType.STRING },
  globalSecondaryIndexes: Object.values(HARNESS_TABLE.indexes).map((index) => ({
    indexName: index.indexName,
    partitionKey: { name: index.partitionKey, type: AttributeType.STRING },
    sortKey: { name: index.sortKey, type: AttributeType.STRING },
    projectionType: projection(index.projection),
  })),
  // The attribute the adapter's expiring items carry (ADR 0034).
  timeToLiveAttribute: HARNESS_TABLE.timeToLiveAttribute,
};

function projection(kind: string): ProjectionType {
  switch (kind) {
    case "KEYS_ONLY":
      return ProjectionType.KEYS_ONLY;
    case "ALL":
      return ProjectionType.ALL;
    default:
      throw new Error(`table-schema: unsupported projection ${kind} (INCLUDE needs its attribute list)`);
  }
}
