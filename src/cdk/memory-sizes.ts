/**
 * The `Harness` construct's default memory size of each function, in MB. Chosen by measurement
 * (`npm run bench -- memory`: each function under its size as a hard limit through the soak's
 * mix, a 2 MB tool output and a 200 KB input among it; docs/adr/0032). Lambda bills duration by
 * memory size, and the http function is held open by every SSE viewer, so these are the cost of
 * the deployment. This module imports nothing (the bench reads it without the CDK).
 */
export const DEFAULT_MEMORY_MB = {
  http: 256,
  worker: 256,
  dlq: 256,
  sweeper: 256,
  schedule: 256,
} as const;
